package bgp

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/bfd"
)

// TestResetOnBFD: a BFD failure resets an established BGP session only; a
// reset asked for in another state would close the next session as soon
// as it is established.
func TestResetOnBFD(t *testing.T) {
	failed := bfd.Event{From: bfd.Up, To: bfd.Down, Diagnostic: 1}
	for _, tc := range []struct {
		name  string
		ev    bfd.Event
		bgp   string
		reset bool
	}{
		{"failure, established", failed, StateEstablished, true},
		{"neighbor down, established", bfd.Event{From: bfd.Up, To: bfd.Down, Diagnostic: 3}, StateEstablished, true},
		{"failure, active", failed, "active", false},
		{"failure, connect", failed, "connect", false},
		{"failure, opensent", failed, "opensent", false},
		{"failure, openconfirm", failed, "openconfirm", false},
		{"failure, idle", failed, "idle", false},
		{"router's AdminDown, established", bfd.Event{From: bfd.Up, To: bfd.Down, RemoteAdminDown: true}, StateEstablished, false},
		{"init to down, established", bfd.Event{From: bfd.Init, To: bfd.Down, Diagnostic: 1}, StateEstablished, false},
		{"up, established", bfd.Event{From: bfd.Init, To: bfd.Up}, StateEstablished, false},
		{"own AdminDown, established", bfd.Event{From: bfd.Up, To: bfd.AdminDown}, StateEstablished, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := resetOnBFD(tc.ev, tc.bgp); got != tc.reset {
				t.Errorf("resetOnBFD(%+v, %q) = %v, want %v", tc.ev, tc.bgp, got, tc.reset)
			}
		})
	}
}

// TestRunBFDFollowsRouter: a peer's BFD session starts with the router's
// address, is kept when the same address comes again, and moves to a new
// one: the session with the old address ends. The routers are link-local
// addresses on a link this host does not have, so the sessions never
// open (nothing is sent) and are only looked at.
func TestRunBFDFollowsRouter(t *testing.T) {
	s := &Speaker{cfg: Config{Peers: []Peer{{Name: "tor", Interface: "mccm-none0", BFD: &BFD{ReceiveInterval: time.Second, TransmitInterval: time.Second, Multiplier: 3}}, {Name: "plain"}}}}
	ctx, cancel := context.WithCancel(context.Background())
	s.bfd = newBFDSessions(ctx, logr.Discard(), 2)
	defer func() {
		cancel()
		s.bfd.wg.Wait()
	}()
	first := netip.MustParseAddr("fe80::1%mccm-none0")
	s.runBFD(0, nil, first)
	s.runBFD(1, nil, first)
	if got := s.bfd.sessions(); got[0] == nil || got[1] != nil {
		t.Fatalf("sessions %v: want one for the peer with BFD only", got)
	}
	old := s.bfd.peers[0]
	s.runBFD(0, nil, first)
	if s.bfd.peers[0].sess != old.sess {
		t.Fatal("the same router's address started a second session")
	}
	moved := netip.MustParseAddr("fe80::2%mccm-none0")
	s.runBFD(0, nil, moved)
	if now := s.bfd.peers[0]; now.sess == old.sess || now.router != moved {
		t.Fatalf("session with %s, want one with %s", now.router, moved)
	}
	select {
	case <-old.done:
	case <-time.After(30 * time.Second): // a bound, not a timing
		t.Fatal("the session with the old address still runs")
	}
}
