package l2

import (
	"net/netip"
	"slices"
	"sync"
	"time"

	"k8s.io/klog/v2"
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

// holdGap is how long an address may go unanswered and still count as
// answered since before: a moment without a majority (a member's flap in
// the membership) does not start the count again.
const holdGap = 2 * time.Second

// answered is since when an address is answered, and whether it is now
// (else since when it is not).
type answered struct {
	since, left time.Time
	now         bool
}

// holds tells the membership which addresses this agent holds: those it
// has answered for since at least holdAfter (gaps up to holdGap included).
// Safe for concurrent use.
type holds struct {
	publish func([]netip.Addr) error
	now     func() time.Time
	// onError is told of a failed publish from the timer (a decide's
	// caller gets the error itself).
	onError func(error)
	logger  klog.Logger

	mu    sync.Mutex
	since map[netip.Addr]answered
	timer *time.Timer
	told  []netip.Addr // the last held addresses published
}

func newHolds(logger klog.Logger, publish func([]netip.Addr) error, onError func(error)) *holds {
	return &holds{publish: publish, now: time.Now, onError: onError, logger: logger, since: map[netip.Addr]answered{}}
}

// set records the addresses the agent answers for now and tells those
// held; the others are told once they have been answered for holdAfter.
func (h *holds) set(mine []netip.Addr) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	for a, e := range h.since {
		switch {
		case slices.Contains(mine, a):
		case e.now:
			h.since[a] = answered{since: e.since, left: now}
		case now.Sub(e.left) > holdGap:
			delete(h.since, a)
		}
	}
	for _, a := range mine {
		e, ok := h.since[a]
		if !ok || !e.now && now.Sub(e.left) > holdGap {
			e.since = now
		}
		h.since[a] = answered{since: e.since, now: true}
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
	for _, a := range held {
		if !slices.Contains(h.told, a) {
			h.logger.Info("Holding the address: the others leave it here while this node can carry it (l2.failback Sticky)", "address", a)
		}
	}
	h.told = held
	return h.publish(held)
}

// heldLocked are the addresses answered for at least holdAfter by now,
// sorted, and how long until the next one is (0: none left).
func (h *holds) heldLocked(now time.Time) ([]netip.Addr, time.Duration) {
	var held []netip.Addr
	var next time.Duration
	for a, e := range h.since {
		if !e.now {
			continue
		}
		if wait := e.since.Add(holdAfter).Sub(now); wait > 0 {
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
