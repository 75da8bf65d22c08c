package l2

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"k8s.io/klog/v2"
)

// TestHolds: an address is held once answered for holdAfter, no longer
// once the agent stops answering for it, and held anew only holdAfter
// after it answers again, unless it was unanswered for holdGap at most. The clock is the test's; the timer is not
// waited for.
func TestHolds(t *testing.T) {
	var told [][]netip.Addr
	h := newHolds(klog.Background(), func(a []netip.Addr) error { told = append(told, a); return nil }, func(err error) { t.Error(err) })
	t.Cleanup(h.stop)
	now := time.Unix(1000, 0)
	h.now = func() time.Time { return now }
	a, b := netip.MustParseAddr("198.18.6.1"), netip.MustParseAddr("2001:db8:6::1")
	for _, step := range []struct {
		name    string
		after   time.Duration // since the last step
		mine    []netip.Addr
		want    []netip.Addr
		pending time.Duration // until the next is held
	}{
		{"just taken: none held yet", 0, []netip.Addr{a}, nil, holdAfter},
		{"half way, b taken", holdAfter / 2, []netip.Addr{a, b}, nil, holdAfter / 2},
		{"a answered for holdAfter", holdAfter / 2, []netip.Addr{a, b}, []netip.Addr{a}, holdAfter / 2},
		{"a given up", time.Second, []netip.Addr{b}, nil, holdAfter/2 - time.Second},
		{"b held, a taken again", holdAfter, []netip.Addr{a, b}, []netip.Addr{b}, holdAfter},
		{"both held", holdAfter, []netip.Addr{b, a}, []netip.Addr{a, b}, 0},
		{"none answered for a moment", 0, nil, nil, 0},
		{"both back within holdGap: still held", holdGap, []netip.Addr{a, b}, []netip.Addr{a, b}, 0},
		{"none answered", 0, nil, nil, 0},
		{"a back after more than holdGap: counted anew", holdGap + time.Millisecond, []netip.Addr{a}, nil, holdAfter},
	} {
		now = now.Add(step.after)
		if err := h.set(step.mine); err != nil {
			t.Fatal(err)
		}
		if got := told[len(told)-1]; !slices.Equal(got, step.want) {
			t.Errorf("%s: told %v, want %v", step.name, got, step.want)
		}
		h.mu.Lock()
		_, pending := h.heldLocked(now)
		armed := h.timer != nil
		h.mu.Unlock()
		if pending != step.pending || armed != (step.pending > 0) {
			t.Errorf("%s: next held in %s (timer armed %v), want %s", step.name, pending, armed, step.pending)
		}
	}
}
