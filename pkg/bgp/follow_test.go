package bgp

import (
	"errors"
	"net/netip"
	"testing"
)

// TestRouterFollowerStep: a peer on an interface is added once its router
// is found, left alone while its session is established or the link's
// router is the same, and moved when the link's router has another
// address; a failed move leaves the peer where move says.
func TestRouterFollowerStep(t *testing.T) {
	old, moved := netip.MustParseAddr("fe80::1%eth0"), netip.MustParseAddr("fe80::2%eth0")
	errFind, errMove := errors.New("no router"), errors.New("add failed")
	for _, tc := range []struct {
		name       string
		cur        netip.Addr
		state      string
		found      netip.Addr
		findErr    error
		moveTo     netip.Addr // what move returns
		moveErr    error
		want       netip.Addr
		wantMoved  bool
		wantMove   bool // move called
		wantFinder bool // find called
	}{
		{"not added, router found", netip.Addr{}, "", old, nil, old, nil, old, true, true, true},
		{"not added, no router yet", netip.Addr{}, "", netip.Addr{}, errFind, netip.Addr{}, nil, netip.Addr{}, false, false, true},
		{"established: nothing looked for", old, StateEstablished, moved, nil, moved, nil, old, false, false, false},
		{"down, same router", old, "active", old, nil, moved, nil, old, false, false, true},
		{"down, the router moved", old, "active", moved, nil, moved, nil, moved, true, true, true},
		{"down, the move fails after the delete", old, "active", moved, nil, netip.Addr{}, errMove, netip.Addr{}, true, true, true},
		{"down, the delete fails", old, "active", moved, nil, old, errMove, old, false, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var called, found bool
			f := routerFollower{
				find: func() (netip.Addr, error) { found = true; return tc.found, tc.findErr },
				state: func(a netip.Addr) string {
					if a != tc.cur {
						t.Errorf("state of %s, want of %s", a, tc.cur)
					}
					return tc.state
				},
				move: func(from, to netip.Addr) (netip.Addr, error) {
					called = true
					if from != tc.cur || to != tc.found {
						t.Errorf("move(%s, %s), want (%s, %s)", from, to, tc.cur, tc.found)
					}
					return tc.moveTo, tc.moveErr
				},
			}
			got, didMove, _ := f.step(tc.cur)
			if got != tc.want || didMove != tc.wantMoved || called != tc.wantMove || found != tc.wantFinder {
				t.Errorf("step(%s) = %s, moved %v (move called %v, find called %v); want %s, %v (%v, %v)",
					tc.cur, got, didMove, called, found, tc.want, tc.wantMoved, tc.wantMove, tc.wantFinder)
			}
		})
	}
}
