package l2

import (
	"net/netip"
	"slices"
	"sync"
	"time"
)

// holdAfter is how long an agent answers for an address before it tells
// the others it holds it (l2.failback Sticky). Agents that start together
// (a cold start, the chart's first install) become fit within a few
// seconds of each other and spread the addresses by hashing before any
// is held; an address taken over from a failed node is held once the
// takeover has lasted this long, so that the node that comes back later
// leaves it where it is. An agent that comes back sooner (a quick
// restart) takes its addresses back as with Rebalance.
const holdAfter = 10 * time.Second

// holds tells the membership which addresses this agent holds: those it
// has answered for since at least holdAfter. Safe for concurrent use.
type holds struct {
	publish func([]netip.Addr) error
	now     func() time.Time
	// onError is told of a failed publish from the timer (a decide's
	// caller gets the error itself).
	onError func(error)

	mu    sync.Mutex
	since map[netip.Addr]time.Time // answered since
	timer *time.Timer
}

func newHolds(publish func([]netip.Addr) error, onError func(error)) *holds {
	return &holds{publish: publish, now: time.Now, onError: onError, since: map[netip.Addr]time.Time{}}
}

// set records the addresses the agent answers for now and tells those
// held; the others are told once they have been answered for holdAfter.
func (h *holds) set(mine []netip.Addr) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	for a := range h.since {
		if !slices.Contains(mine, a) {
			delete(h.since, a)
		}
	}
	for _, a := range mine {
		if _, ok := h.since[a]; !ok {
			h.since[a] = now
		}
	}
	return h.tellLocked(now)
}

// tellLocked publishes the held addresses and arms the timer for the next
// address to be held.
func (h *holds) tellLocked(now time.Time) error {
	held, next := h.heldLocked(now)
	if h.timer != nil {
		h.timer.Stop()
		h.timer = nil
	}
	if next > 0 {
		h.timer = time.AfterFunc(next, func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			if err := h.tellLocked(h.now()); err != nil {
				h.onError(err)
			}
		})
	}
	return h.publish(held)
}

// heldLocked are the addresses answered for at least holdAfter by now,
// sorted, and how long until the next one is (0: none left).
func (h *holds) heldLocked(now time.Time) ([]netip.Addr, time.Duration) {
	var held []netip.Addr
	var next time.Duration
	for a, since := range h.since {
		if wait := since.Add(holdAfter).Sub(now); wait > 0 {
			if next == 0 || wait < next {
				next = wait
			}
			continue
		}
		held = append(held, a)
	}
	slices.SortFunc(held, netip.Addr.Compare)
	return held, next
}

// stop disarms the timer.
func (h *holds) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.timer != nil {
		h.timer.Stop()
		h.timer = nil
	}
}
