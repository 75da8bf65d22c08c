package bgp

import (
	"testing"

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
