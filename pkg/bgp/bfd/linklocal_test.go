package bfd

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/go-logr/logr"
)

// TestOnLink: a link-local source takes the link-local peer's zone, and
// keeps one it has; other addresses stay as they are.
func TestOnLink(t *testing.T) {
	for _, tc := range []struct{ local, peer, want string }{
		{"fe80::11", "fe80::1%eth0", "fe80::11%eth0"},
		{"fe80::11%eth1", "fe80::1%eth1", "fe80::11%eth1"},
		{"2001:db8::2", "fe80::1%eth0", "2001:db8::2"},
		{"198.18.0.2", "198.18.0.1", "198.18.0.2"},
		{"2001:db8::2", "2001:db8::1", "2001:db8::2"},
	} {
		if got := onLink(netip.MustParseAddr(tc.local), netip.MustParseAddr(tc.peer)); got != netip.MustParseAddr(tc.want) {
			t.Errorf("onLink(%s, %s) = %s, want %s", tc.local, tc.peer, got, tc.want)
		}
	}
}

// TestListenerSource: a link-local listener names a link-local source
// with its own zone, so that the session of a peer on that link is found
// whatever zone name the kernel's interface index gave; a listener without
// a zone, or a global source, keeps the source as it came.
func TestListenerSource(t *testing.T) {
	ll := &listener{addr: netip.MustParseAddrPort("[fe80::11%eth0]:3784")}
	global := &listener{addr: netip.MustParseAddrPort("[2001:db8::2]:3784")}
	for _, tc := range []struct {
		l         *listener
		src, want string
	}{
		{ll, "fe80::1", "fe80::1%eth0"},
		{ll, "fe80::1%3", "fe80::1%eth0"},
		{ll, "fe80::1%eth0", "fe80::1%eth0"},
		{ll, "2001:db8::1", "2001:db8::1"},
		{global, "2001:db8::1", "2001:db8::1"},
		{global, "fe80::1%eth0", "fe80::1%eth0"},
	} {
		if got := tc.l.source(netip.MustParseAddr(tc.src)); got != netip.MustParseAddr(tc.want) {
			t.Errorf("listener on %s: source %s = %s, want %s", tc.l.addr, tc.src, got, tc.want)
		}
	}
}

// TestLinkLocalPeerNeedsZone: a link-local peer without its link cannot
// be reached (which link?): the session does not open.
func TestLinkLocalPeerNeedsZone(t *testing.T) {
	s := New(Config{Peer: netip.MustParseAddr("fe80::1"), Multiplier: 3}, logr.Discard(), nil)
	if err := s.open(); err == nil || !strings.Contains(err.Error(), "zone") {
		t.Fatalf("open: %v, want an error about the zone", err)
	}
}
