package healthcheck

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"
)

// TestNextTick: a slot's ticks are its phase (index × Interval/numSlots
// after base) plus whole intervals, and the next one is strictly after the
// time given, before the phase too.
func TestNextTick(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := &Checker{opts: Options{Interval: time.Second}, base: base}
	step := time.Second / numSlots
	for _, tc := range []struct {
		name  string
		index int
		at    time.Duration // after base
		want  time.Duration // after base
	}{
		{"slot 0 at base", 0, 0, time.Second},
		{"slot 0 within the first interval", 0, 300 * time.Millisecond, time.Second},
		{"slot 0 on a tick", 0, 3 * time.Second, 4 * time.Second},
		{"slot 3 before its phase", 3, 0, 3 * step},
		{"slot 3 on its phase", 3, 3 * step, time.Second + 3*step},
		{"slot 3 late in an interval", 3, 5*time.Second + 900*time.Millisecond, 6*time.Second + 3*step},
		{"before base", 1, -1500 * time.Millisecond, -time.Second + step},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := c.nextTick(&slot{index: tc.index}, base.Add(tc.at))
			if want := base.Add(tc.want); !got.Equal(want) {
				t.Errorf("next tick %s after base, want %s", got.Sub(base), tc.want)
			}
		})
	}
}

// TestSlotFor: the first targets get a slot each, up to numSlots; then
// each goes to the slot with the fewest, so slots stay even.
func TestSlotFor(t *testing.T) {
	c := New(Options{}, nil, nil)
	var addrs []netip.AddrPort
	for i := range 5 * numSlots {
		addrs = append(addrs, netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 18, 0, byte(i + 1)}), 10256))
	}
	c.Set(addrs[:3])
	if len(c.slots) != 3 {
		t.Fatalf("3 targets: %d slots, want 3", len(c.slots))
	}
	c.Set(addrs)
	if len(c.slots) != numSlots {
		t.Fatalf("%d targets: %d slots, want %d", len(addrs), len(c.slots), numSlots)
	}
	for _, sl := range c.slots {
		if len(sl.targets) != 5 {
			t.Errorf("slot %d: %d targets, want 5", sl.index, len(sl.targets))
		}
	}
	// Removed targets leave their slot, their connections to be closed
	// by its goroutine.
	c.Set(addrs[:numSlots])
	n, gone := 0, 0
	for _, sl := range c.slots {
		n += len(sl.targets)
		gone += len(sl.gone)
	}
	if n != numSlots || gone != 4*numSlots {
		t.Errorf("after removing: %d targets in slots, %d gone; want %d and %d", n, gone, numSlots, 4*numSlots)
	}
}

// TestRecordAll: after a round a target is due at its slot's next tick,
// but a Healthy target that failed is due at once (checked again without
// waiting for the interval), and a target that is Unhealthy is not.
func TestRecordAll(t *testing.T) {
	c := New(Options{Interval: time.Second, FailuresToWithdraw: 2, SuccessesToReturn: 2}, nil, nil)
	addrs := []netip.AddrPort{netip.MustParseAddrPort("198.18.0.1:10256"), netip.MustParseAddrPort("198.18.0.2:10256"),
		netip.MustParseAddrPort("198.18.0.3:10256")}
	c.Set(addrs)
	// One slot for all three, to record them as one round.
	sl := c.slots[0]
	due := []*target{c.targets[addrs[0]], c.targets[addrs[1]], c.targets[addrs[2]]}
	start := c.base.Add(2500 * time.Millisecond)
	tick := c.nextTick(sl, start)
	// First round: two pass, one fails (Unknown to Unhealthy).
	c.recordAll(sl, due, []result{{passed: true}, {passed: true}, {passed: false}}, start, false)
	for i, want := range []State{Healthy, Healthy, Unhealthy} {
		if got := c.State(addrs[i]); got != want {
			t.Errorf("round 1, %s: %s, want %s", addrs[i], got, want)
		}
		if !due[i].next.Equal(tick) {
			t.Errorf("round 1, %s: due %s after base, want the slot's next tick %s", addrs[i], due[i].next.Sub(c.base), tick.Sub(c.base))
		}
	}
	// Second round: the first Healthy target fails once: still Healthy,
	// due at once; the Unhealthy one fails again: due at the tick.
	c.recordAll(sl, due, []result{{passed: false}, {passed: true}, {passed: false}}, tick, false)
	if got := c.State(addrs[0]); got != Healthy || !due[0].next.IsZero() {
		t.Errorf("a Healthy target's first failure: %s, due %v; want healthy, due at once", got, due[0].next)
	}
	if next := c.nextTick(sl, tick); !due[1].next.Equal(next) || !due[2].next.Equal(next) {
		t.Errorf("due %s and %s after base, want the next tick %s", due[1].next.Sub(c.base), due[2].next.Sub(c.base), next.Sub(c.base))
	}
	// The recheck fails too: Unhealthy, back on the slot's ticks.
	c.recordAll(sl, due[:1], []result{{passed: false}}, tick.Add(10*time.Millisecond), false)
	if got := c.State(addrs[0]); got != Unhealthy || due[0].next.IsZero() {
		t.Errorf("the recheck failed: %s, due %v; want unhealthy, due at the tick", got, due[0].next)
	}
	if d := c.untilDue(sl); d <= 0 {
		t.Errorf("untilDue %s, want the time to the next tick", d)
	}
}

// TestPings: with HTTPInterval, a Healthy target whose HTTP check passed
// is pinged at the ticks until its next HTTP check is due; a failed ping
// is followed at once by an HTTP check; an HTTP check that passes right
// after a failed ping leaves the target to HTTP alone for a while; an
// Unhealthy target is checked by HTTP alone.
func TestPings(t *testing.T) {
	o := Options{Interval: time.Second, HTTPInterval: 3 * time.Second, FailuresToWithdraw: 2, SuccessesToReturn: 2}
	c := New(o, nil, nil)
	addr := netip.MustParseAddrPort("198.18.0.1:10256")
	c.Set([]netip.AddrPort{addr})
	sl, tg := c.slots[0], c.targets[addr]
	pings := func(at time.Time) bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.pings(tg, at)
	}
	start := c.base.Add(10 * time.Millisecond)
	if pings(start) {
		t.Fatal("a new target is pinged, want an HTTP check")
	}
	tick := func(n int) time.Time { return c.nextTick(sl, start).Add(time.Duration(n-1) * o.Interval) }
	c.recordAll(sl, []*target{tg}, []result{{passed: true}}, start, false)
	// Ticks 1 and 2 ping; tick 3 (HTTPInterval on) is an HTTP check.
	for n, want := range map[int]bool{1: true, 2: true, 3: false} {
		if got := pings(tick(n).Add(5 * time.Millisecond)); got != want {
			t.Errorf("after an HTTP check that passed, tick %d pings: %t, want %t", n, got, want)
		}
	}
	c.recordAll(sl, []*target{tg}, []result{{passed: true}}, tick(1), true)
	if !tg.next.Equal(tick(2)) || c.State(addr) != Healthy {
		t.Errorf("after a ping that passed: %s, due %s; want healthy, due at the next tick", c.State(addr), tg.next.Sub(c.base))
	}
	// A lost ping: still Healthy, an HTTP check at once.
	c.recordAll(sl, []*target{tg}, []result{{passed: false}}, tick(2), true)
	if !tg.next.IsZero() || pings(tick(2)) || c.State(addr) != Healthy {
		t.Errorf("after a failed ping: %s, due %v, pinged next: %t; want healthy, an HTTP check at once", c.State(addr), tg.next, pings(tick(2)))
	}
	// It passes: the node drops pings, HTTP alone for noPingFor intervals.
	c.recordAll(sl, []*target{tg}, []result{{passed: true}}, tick(2).Add(time.Millisecond), false)
	if pings(tick(4)) || pings(tick(2).Add(noPingFor*o.HTTPInterval-time.Second)) {
		t.Error("a node that dropped a ping but passed its HTTP check is pinged again at once")
	}
	back := tick(2).Add(noPingFor*o.HTTPInterval + time.Second)
	c.recordAll(sl, []*target{tg}, []result{{passed: true}}, back, false)
	later := back.Add(time.Second)
	if !pings(later) {
		t.Errorf("a node that dropped a ping is not pinged again after %d HTTP intervals", noPingFor)
	}
	// A node that stops answering: the ping fails, then the HTTP check:
	// Unhealthy, then checked by HTTP alone.
	c.recordAll(sl, []*target{tg}, []result{{passed: false}}, later, true)
	c.recordAll(sl, []*target{tg}, []result{{passed: false}}, later.Add(400*time.Millisecond), false)
	if c.State(addr) != Unhealthy || pings(later.Add(time.Second)) {
		t.Errorf("after a failed ping and a failed HTTP check: %s, pinged next: %t; want unhealthy, HTTP checks", c.State(addr), pings(later.Add(time.Second)))
	}
	// Pings off: HTTP alone.
	c2 := New(Options{Interval: time.Second}, nil, nil)
	c2.Set([]netip.AddrPort{addr})
	tg2 := c2.targets[addr]
	c2.recordAll(c2.slots[0], []*target{tg2}, []result{{passed: true}}, start, false)
	if c2.pings(tg2, start.Add(time.Second)) {
		t.Error("without HTTPInterval a target is pinged")
	}
}

// TestCheckAll checks targets together: kept connections written first and
// read after, new ones dialled; a kept connection the server closed is
// dialled again within the same deadline; a refused one and a 503 fail.
func TestCheckAll(t *testing.T) {
	var ok, bad atomic.Int32
	ok.Store(http.StatusOK)
	bad.Store(http.StatusServiceUnavailable)
	srvOK, addrOK := server(t, &ok)
	_, addrBad := server(t, &bad)
	_, addrOK2 := server(t, &ok)
	// A port nothing listens on: a listener opened and closed.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := netip.MustParseAddrPort(ln.Addr().String())
	_ = ln.Close()
	addrs := []netip.AddrPort{addrOK, addrBad, refused, addrOK2}
	var due []*target
	for _, a := range addrs {
		due = append(due, &target{addr: a, p: newProber(a, "/healthz", 5*time.Second)})
	}
	defer func() {
		for _, tg := range due {
			tg.p.close()
		}
	}()
	ctx := context.Background()
	want := []bool{true, false, false, true}
	check := func(round string) {
		t.Helper()
		got := checkAll(ctx, due, time.Now(), 5*time.Second)
		for i, r := range got {
			if r.passed != want[i] {
				t.Errorf("%s, %s: passed %t, want %t", round, addrs[i], r.passed, want[i])
			}
		}
	}
	check("first round (dialled)")
	kept := due[0].p.conn
	if kept == nil || due[1].p.conn == nil || due[2].p.conn != nil {
		t.Fatalf("connections after the first round: %v %v %v, want kept, kept, none", kept, due[1].p.conn, due[2].p.conn)
	}
	check("second round (kept connections)")
	if due[0].p.conn != kept {
		t.Error("the second round did not use the kept connection")
	}
	srvOK.CloseClientConnections()
	check("after the server closed its connections")
	if due[0].p.conn == nil || due[0].p.conn == kept {
		t.Error("no new connection after the server closed the kept one")
	}
}
