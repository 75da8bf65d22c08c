package member

import (
	"net/netip"
	"testing"
	"time"
)

// TestReannounceOnJoin: a member that sees another join gossips its
// metadata again (a new incarnation), so that the newcomer has its current
// fitness even if it learnt an older one from a third member; an observer
// has nothing to announce. (The counter is the loop's; that memberlist
// sends what UpdateNode gives it is TestFitnessGossiped's.)
func TestReannounceOnJoin(t *testing.T) {
	a := start(t, Config{Name: "a0", Addresses: addresses(1)})
	o := start(t, Config{Name: "ccm", Observer: true, Addresses: addresses(100)})
	if err := o.Join([]netip.AddrPort{a.LocalAddr()}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "a0 sees the observer", func() bool { return len(a.ml.Members()) == 2 })
	// The observer's join announced a0 again: wait for that to settle.
	time.Sleep(2 * reannounceAfter)
	before := a.reannounced.Load()

	b := start(t, Config{Name: "a1", Addresses: addresses(2)})
	if err := b.Join([]netip.AddrPort{a.LocalAddr()}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "a0 announced again after a1 joined", func() bool { return a.reannounced.Load() > before })
	eventually(t, 5*time.Second, "a1 announced again after seeing a0", func() bool { return b.reannounced.Load() > 0 })
	if got := o.reannounced.Load(); got != 0 {
		t.Errorf("the observer announced itself %d times", got)
	}
}
