package healthcheck

import (
	"context"
	"net/netip"
	"slices"
	"sync"
	"time"
)

// numSlots is how many slots the interval is cut into. Each slot is one
// goroutine that checks its targets together, once an interval, at its
// own phase (the slot's index times Interval/numSlots), so that the
// checks are spread over the interval. Checking a slot's targets together
// is what makes thousands of targets cheap: the requests are written one
// after the other, then the answers read, which by then are mostly there,
// so a check costs a write and a read, without a goroutine, a timer and a
// wake-up of its own (a replica checking 5,000 nodes a second spent a
// third of its checks' CPU on those; docs/performance.md).
const numSlots = 16

// slot is a group of targets checked together; its fields but wake are
// under the Checker's mu.
type slot struct {
	index   int
	targets []*target
	// gone are removed targets whose connections the slot's goroutine
	// closes (it alone uses them).
	gone    []*target
	running bool
	// wake has the goroutine look for due targets now (a new one).
	wake chan struct{}
	// pinger is the slot goroutine's; pingOff says a family's socket
	// could not be opened (ErrPingUnavailable), so its targets are
	// checked by HTTP alone.
	pinger  pinger
	pingOff [2]bool
}

// slotFor is the slot with the fewest targets, made when fewer than
// numSlots exist; c.mu is held.
func (c *Checker) slotFor() *slot {
	if len(c.slots) < numSlots {
		sl := &slot{index: len(c.slots), wake: make(chan struct{}, 1)}
		c.slots = append(c.slots, sl)
		return sl
	}
	least := c.slots[0]
	for _, sl := range c.slots[1:] {
		if len(sl.targets) < len(least.targets) {
			least = sl
		}
	}
	return least
}

func (sl *slot) add(t *target) {
	t.slot = sl
	sl.targets = append(sl.targets, t)
	sl.poke()
}

func (sl *slot) remove(t *target) {
	if i := slices.Index(sl.targets, t); i >= 0 {
		sl.targets = slices.Delete(sl.targets, i, i+1)
	}
	sl.gone = append(sl.gone, t)
	sl.poke()
}

func (sl *slot) poke() {
	select {
	case sl.wake <- struct{}{}:
	default:
	}
}

// nextTick is the slot's first tick after t: its phase (the slot's index
// times Interval/numSlots after base) plus a whole number of intervals.
func (c *Checker) nextTick(sl *slot, t time.Time) time.Time {
	iv := c.opts.Interval
	phase := c.base.Add(time.Duration(sl.index) * (iv / numSlots))
	d := t.Sub(phase)
	n := d / iv
	if d < 0 && d%iv != 0 {
		n-- // the floor, not toward zero
	}
	return phase.Add((n + 1) * iv)
}

// runSlot checks sl's targets as they fall due until ctx ends: a target is
// due when new, at each of the slot's ticks, and at once after a failure
// while Healthy.
func (c *Checker) runSlot(ctx context.Context, sl *slot) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	defer func() {
		c.mu.Lock()
		all := slices.Concat(sl.targets, sl.gone)
		sl.gone, sl.running = nil, false
		c.mu.Unlock()
		for _, t := range all {
			t.p.close()
		}
		sl.pinger.close()
	}()
	c.openPings(sl)
	var due, pinged []*target
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-sl.wake:
		}
		start := time.Now()
		c.mu.Lock()
		gone := sl.gone
		sl.gone = nil
		due, pinged = due[:0], pinged[:0]
		for _, t := range sl.targets {
			switch {
			case t.next.After(start):
			case c.pings(t, start) && !sl.pingOff[family(t.addr.Addr())]:
				pinged = append(pinged, t)
			default:
				due = append(due, t)
			}
		}
		c.mu.Unlock()
		for _, t := range gone {
			t.p.close()
		}
		if len(due)+len(pinged) > 0 {
			// The pings and the HTTP checks run together, each bounded by
			// the same timeout.
			var pings []result
			var wg sync.WaitGroup
			if len(pinged) > 0 {
				wg.Go(func() { pings = c.pingAll(sl, pinged, start) })
			}
			results := checkAll(ctx, due, start, c.opts.Timeout)
			wg.Wait()
			if ctx.Err() != nil {
				return
			}
			c.recordAll(sl, pinged, pings, start, true)
			c.recordAll(sl, due, results, start, false)
		}
		timer.Reset(c.untilDue(sl))
	}
}

// result is one check's.
type result struct {
	passed bool
	took   time.Duration
}

// recordAll counts the results of a round begun at start (pings or HTTP
// checks) and sets when each target is due again: at the slot's next tick,
// or at once after a failure while Healthy (a dead node is withdrawn after
// FailuresToWithdraw timeouts, not that many intervals), then by HTTP.
func (c *Checker) recordAll(sl *slot, due []*target, results []result, start time.Time, pinged bool) {
	tick := c.nextTick(sl, start)
	po, _ := c.observer.(PingObserver)
	for i, t := range due {
		r := results[i]
		switch {
		case pinged && po != nil:
			po.Pinged(t.addr, r.passed)
		case !pinged && c.observer != nil:
			c.observer.Checked(t.addr, r.passed, r.took)
		}
		state := c.record(t, r.passed)
		c.mu.Lock()
		t.next = tick
		if !r.passed && state == Healthy {
			t.next = time.Time{}
		}
		switch {
		case pinged && !r.passed:
			t.pingFailed, t.httpNext = true, time.Time{}
		case !pinged:
			if r.passed && t.pingFailed {
				t.noPingUntil = start.Add(noPingFor * c.opts.HTTPInterval)
			}
			// The next HTTP check falls on the slot's first tick
			// HTTPInterval on (half an interval early: a round starts a
			// little after its tick).
			t.httpOK, t.pingFailed = r.passed, false
			t.httpNext = start.Add(c.opts.HTTPInterval - c.opts.Interval/2)
		}
		c.mu.Unlock()
	}
}

// pingAll pings the targets' addresses, each within the timeout of start.
func (c *Checker) pingAll(sl *slot, due []*target, start time.Time) []result {
	addrs := make([]netip.Addr, len(due))
	for i, t := range due {
		addrs[i] = t.addr.Addr()
	}
	replied, err := sl.pinger.ping(addrs, start.Add(c.opts.Timeout))
	took := time.Since(start)
	results := make([]result, len(due))
	for i := range due {
		results[i] = result{passed: replied[i], took: took}
	}
	_ = err // the slot's sockets were opened when it started (openPings): none fails here
	return results
}

// openPings opens the slot's ping sockets when pings are on; a family
// whose socket cannot be opened (ErrPingUnavailable: the process's group is
// outside net.ipv4.ping_group_range; no IPv6) is checked by HTTP alone.
func (c *Checker) openPings(sl *slot) {
	if c.opts.HTTPInterval <= c.opts.Interval {
		return
	}
	for f := range sl.pingOff {
		_, err := sl.pinger.conn(f == 1)
		c.mu.Lock()
		sl.pingOff[f] = err != nil
		c.mu.Unlock()
	}
}

// family indexes a pinger's sockets: 0 for IPv4, 1 for IPv6.
func family(a netip.Addr) int {
	if a.Unmap().Is4() {
		return 0
	}
	return 1
}

// untilDue is the time until sl's first target is due (0: one is).
func (c *Checker) untilDue(sl *slot) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(sl.targets) == 0 {
		return c.opts.Interval // nothing to check; a new target wakes it
	}
	first := sl.targets[0].next
	for _, t := range sl.targets[1:] {
		if t.next.Before(first) {
			first = t.next
		}
	}
	return max(time.Until(first), 0)
}

// checkAll checks the targets together, each within timeout of start: the
// requests on kept connections are written first, then their answers read
// in turn; a target without a connection, or whose kept one failed other
// than by the timeout, is dialled in a goroutine of its own meanwhile.
func checkAll(ctx context.Context, due []*target, start time.Time, timeout time.Duration) []result {
	deadline := start.Add(timeout)
	results := make([]result, len(due))
	var dials sync.WaitGroup
	dial := func(i int) {
		dials.Go(func() {
			p := due[i].p
			p.close()
			ok, err := p.roundTrip(ctx, deadline)
			if err != nil {
				p.close()
			}
			results[i] = result{passed: ok, took: time.Since(start)}
		})
	}
	sent := make([]bool, len(due))
	for i, t := range due {
		if t.p.conn == nil {
			dial(i)
			continue
		}
		if err := t.p.send(deadline); err != nil {
			t.p.close()
			if retry(err, deadline) {
				dial(i)
			} else {
				results[i] = result{took: time.Since(start)}
			}
			continue
		}
		sent[i] = true
	}
	for i, t := range due {
		if !sent[i] {
			continue
		}
		ok, err := t.p.receive()
		if err != nil && retry(err, deadline) {
			// The server may have closed the idle connection: once more
			// on a new one, within the same deadline.
			dial(i)
			continue
		}
		if err != nil {
			t.p.close()
		}
		results[i] = result{passed: ok, took: time.Since(start)}
	}
	dials.Wait()
	return results
}

// retry says whether a check that failed with err on a kept connection is
// tried again on a new one: not after the timeout.
func retry(err error, deadline time.Time) bool {
	return !isTimeout(err) && time.Now().Before(deadline)
}
