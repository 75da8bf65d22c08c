package l2

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ndp"

	"github.com/metal-ccm/metal-ccm/test/framework"
)

var (
	vip4b = netip.MustParseAddr("198.18.121.101")
	vip6b = netip.MustParseAddr("2001:db8:121::101")
	// offSegment is in no prefix of the node.
	offSegment = netip.MustParseAddr("198.19.121.5")
)

func TestResponderAnswers(t *testing.T) {
	s := newSegment(t)
	r := s.start(t, Options{})
	if err := s.set(t, r, vip4, vip6, vip4b, vip6b); err != nil {
		t.Fatalf("SetAddresses: %v", err)
	}
	for _, addr := range []netip.Addr{vip4, vip6, vip4b, vip6b} {
		t.Run("resolves "+addr.String(), func(t *testing.T) { s.eventuallyResolves(t, addr) })
	}
	t.Run("client kernel resolves", func(t *testing.T) {
		for _, addr := range []netip.Addr{vip4, vip6} {
			s.kernelResolves(t, addr)
		}
	})
	t.Run("status", func(t *testing.T) {
		got := r.Addresses()
		if len(got) != 4 {
			t.Fatalf("Addresses() = %v, want 4", got)
		}
		for _, a := range got {
			if !slices.Equal(a.Interfaces, []string{nodeIf}) {
				t.Errorf("%s answered on %v, want [%s]", a.Addr, a.Interfaces, nodeIf)
			}
		}
		st := r.Stats()
		if st.IPv4.Replies == 0 || st.IPv6.Replies == 0 || st.IPv4.Gratuitous < 2 || st.IPv6.Gratuitous < 2 {
			t.Errorf("Stats() = %+v, want replies and at least the first gratuitous packets of both families", st)
		}
	})
	t.Run("removed addresses are no longer answered", func(t *testing.T) {
		if err := s.set(t, r, vip4, vip6); err != nil {
			t.Fatalf("SetAddresses: %v", err)
		}
		for _, addr := range []netip.Addr{vip4b, vip6b} {
			s.notAnswered(t, addr)
		}
		for _, addr := range []netip.Addr{vip4, vip6} {
			s.eventuallyResolves(t, addr)
		}
	})
	t.Run("none left: sockets closed, nothing answered", func(t *testing.T) {
		if err := s.set(t, r); err != nil {
			t.Fatalf("SetAddresses: %v", err)
		}
		r.mu.RLock()
		links := len(r.links)
		r.mu.RUnlock()
		if links != 0 {
			t.Errorf("%d interfaces still open with no address", links)
		}
		for _, addr := range []netip.Addr{vip4, vip6} {
			s.notAnswered(t, addr)
		}
	})
}

// kernelResolves sends a UDP datagram to addr from the client namespace, so
// that the client's kernel resolves addr as any host would, and waits until
// its neighbor table holds the node's MAC for addr.
func (s *segment) kernelResolves(t *testing.T, addr netip.Addr) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		conn, err := framework.DialInNetNS(t.Context(), s.client, "udp", net.JoinHostPort(addr.String(), "9"))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = conn.Write([]byte("resolve"))
		_ = conn.Close()
		out := ipCmd(t, "-n", s.client, "neigh", "show", addr.String(), "dev", clientIf)
		if strings.Contains(out, "lladdr "+s.nodeMAC.String()) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the client's kernel has no entry %s -> %s within 5 s: %q", addr, s.nodeMAC, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestResponderGratuitous(t *testing.T) {
	s := newSegment(t)
	r := s.start(t, Options{})
	ac := s.arpClient(t)
	nc := s.ndpClient(t)
	// Captures are open before the addresses are set: the first packets go
	// out before SetAddresses returns.
	arpc := make(chan int, 1)
	go func() { arpc <- countGratuitousARP(ac, s.nodeMAC, vip4) }()
	ndpc := make(chan int, 1)
	go func() { ndpc <- countUnsolicitedNA(nc, s.nodeMAC, vip6) }()
	if err := s.set(t, r, vip4, vip6); err != nil {
		t.Fatalf("SetAddresses: %v", err)
	}
	// At least two, so that the repeats are seen too (three are sent over
	// about 2 s).
	if n := <-arpc; n < 2 {
		t.Errorf("%d gratuitous ARPs for %s from %s within 5 s, want at least 2", n, vip4, s.nodeMAC)
	}
	if n := <-ndpc; n < 2 {
		t.Errorf("%d unsolicited Neighbor Advertisements for %s from %s within 5 s, want at least 2", n, vip6, s.nodeMAC)
	}
}

// TestResponderAnnounce: Announce sends the gratuitous packets again for
// the answered addresses it is given, and for no other.
func TestResponderAnnounce(t *testing.T) {
	s := newSegment(t)
	r := s.start(t, Options{})
	ac := s.arpClient(t)
	nc := s.ndpClient(t)
	if err := s.set(t, r, vip4, vip6); err != nil {
		t.Fatalf("SetAddresses: %v", err)
	}
	// The first announcements (about 2 s) are over when a window of 5 s
	// without more ends.
	countGratuitousARP(ac, s.nodeMAC, vip4)
	arpc := make(chan int, 1)
	go func() { arpc <- countGratuitousARP(ac, s.nodeMAC, vip4) }()
	ndpc := make(chan int, 1)
	go func() { ndpc <- countUnsolicitedNA(nc, s.nodeMAC, vip6) }()
	unanswered := netip.MustParseAddr("198.18.121.199")
	r.Announce(t.Context(), []netip.Addr{vip4, vip6, unanswered})
	if n := <-arpc; n < 2 {
		t.Errorf("%d gratuitous ARPs for %s after Announce, want at least 2", n, vip4)
	}
	if n := <-ndpc; n < 2 {
		t.Errorf("%d unsolicited Neighbor Advertisements for %s after Announce, want at least 2", n, vip6)
	}
	if got := r.Stats(); got.IPv4.Gratuitous < 5 || got.IPv6.Gratuitous < 5 {
		t.Errorf("stats %+v: want the first three and the repeated ones counted", got)
	}
	for _, a := range r.Addresses() {
		if a.Addr == unanswered {
			t.Errorf("Announce made %s answered", unanswered)
		}
	}
}

// TestResponderRefresh: with Options.Refresh, the answered addresses are
// announced again and again, after the first announcements are over.
func TestResponderRefresh(t *testing.T) {
	s := newSegment(t)
	r := s.start(t, Options{Refresh: 300 * time.Millisecond})
	ac := s.arpClient(t)
	if err := s.set(t, r, vip4, vip6); err != nil {
		t.Fatalf("SetAddresses: %v", err)
	}
	// The first three are over after about 2 s: a capture of 5 s more
	// hears only refreshes.
	time.Sleep(3 * time.Second)
	if n := countGratuitousARP(ac, s.nodeMAC, vip4); n < 5 {
		t.Errorf("%d gratuitous ARPs for %s in 5 s after the first ones, want the refreshes (every 300 ms)", n, vip4)
	}
	if got := r.Stats(); got.IPv6.Gratuitous < 8 {
		t.Errorf("stats %+v: want the IPv6 refreshes counted", got)
	}
}

func countGratuitousARP(c *arp.Client, mac net.HardwareAddr, addr netip.Addr) int {
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	n := 0
	for {
		p, _, err := c.Read()
		if err != nil {
			return n
		}
		if p.SenderIP == addr && p.TargetIP == addr && slices.Equal(p.SenderHardwareAddr, mac) {
			n++
		}
	}
}

func countUnsolicitedNA(c *ndp.Conn, mac net.HardwareAddr, addr netip.Addr) int {
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	n := 0
	for {
		m, _, _, err := c.ReadFrom()
		if err != nil {
			return n
		}
		na, ok := m.(*ndp.NeighborAdvertisement)
		if ok && na.TargetAddress == addr && !na.Solicited && na.Override && slices.Equal(targetLinkLayer(na), mac) {
			n++
		}
	}
}

func TestResponderBadInput(t *testing.T) {
	s := newSegment(t)
	tests := []struct {
		name    string
		opts    Options
		addrs   []netip.Addr
		wantErr error
		named   string // what the error must name
		answer  []netip.Addr
	}{
		{
			name:    "no interface for one address",
			addrs:   []netip.Addr{vip4, offSegment, vip6},
			wantErr: ErrNoInterface, named: offSegment.String(),
			answer: []netip.Addr{vip4, vip6},
		},
		{
			name:    "a named interface is missing",
			opts:    Options{Interfaces: []string{nodeIf, "missing0"}},
			addrs:   []netip.Addr{vip4, offSegment, vip6},
			wantErr: ErrInterfaceNotFound, named: "missing0",
			// Named interfaces answer whatever their prefixes.
			answer: []netip.Addr{vip4, offSegment, vip6},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := s.start(t, tc.opts)
			err := s.set(t, r, tc.addrs...)
			if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.named) {
				t.Fatalf("SetAddresses: %v, want an error wrapping %v that names %s", err, tc.wantErr, tc.named)
			}
			for _, addr := range tc.answer {
				s.eventuallyResolves(t, addr)
			}
			var got []netip.Addr
			for _, a := range r.Addresses() {
				got = append(got, a.Addr)
			}
			if !slices.Equal(got, tc.answer) {
				t.Errorf("Addresses() = %v, want %v", got, tc.answer)
			}
		})
	}
}

func TestResponderRunCloses(t *testing.T) {
	s := newSegment(t)
	r := New(Options{})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	if err := s.set(t, r, vip4, vip6); err != nil {
		t.Fatalf("SetAddresses: %v", err)
	}
	s.eventuallyResolves(t, vip4)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return within 5 s of its context ending")
	}
	if err := s.set(t, r, vip4); !errors.Is(err, ErrClosed) {
		t.Errorf("SetAddresses after Run: %v, want ErrClosed", err)
	}
	s.notAnswered(t, vip4)
	s.notAnswered(t, vip6)
}
