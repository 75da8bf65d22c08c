package healthcheck

import (
	"context"
	"net/netip"
	"sync"
	"time"
)

// State of a target.
type State int

const (
	// Unknown: no result yet.
	Unknown State = iota
	// Healthy: the first result passed, or SuccessesToReturn in a row since
	// it was Unhealthy.
	Healthy
	// Unhealthy: the first result failed, or FailuresToWithdraw in a row
	// since it was Healthy.
	Unhealthy
)

func (s State) String() string {
	switch s {
	case Healthy:
		return "healthy"
	case Unhealthy:
		return "unhealthy"
	default:
		return "unknown"
	}
}

// Options of a Checker. Zero values take the defaults of DefaultOptions.
type Options struct {
	// Interval is the time from the start of one check of a target to the
	// start of the next (a check that takes longer is followed at once).
	Interval time.Duration
	// Timeout bounds one check: connecting, sending, and reading the answer.
	Timeout time.Duration
	// FailuresToWithdraw and SuccessesToReturn are the results in a row
	// that turn a Healthy target Unhealthy and back.
	FailuresToWithdraw, SuccessesToReturn int
	// Path is the HTTP path checked; a 200 answer passes.
	Path string
	// HTTPInterval, when longer than Interval, is the time between two
	// HTTP checks of a Healthy target whose last one passed: at the
	// checks between, its address is pinged (ICMP echo), and a ping
	// without a reply within Timeout is a failure followed at once by an
	// HTTP check, as a failed HTTP check is. A target whose address does
	// not answer pings while its HTTP check passes is checked by HTTP
	// alone for a while (noPingFor). Zero: every check is an HTTP check.
	HTTPInterval time.Duration
}

// noPingFor is how many HTTP intervals a target whose ping failed while
// its HTTP check passed right after is checked by HTTP alone: its node may
// drop pings (a firewall), and one lost ping costs little.
const noPingFor = 10

// DefaultOptions: a target that stops answering is Unhealthy within
// Interval + 2×Timeout (1.8 s; a failure is checked again at once), one
// that refuses connections within about Interval (1 s); a replica checking
// 1,000 nodes sends 1,000 requests a second.
func DefaultOptions() Options {
	return Options{Interval: time.Second, Timeout: 400 * time.Millisecond,
		FailuresToWithdraw: 2, SuccessesToReturn: 2, Path: "/healthz"}
}

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.Interval <= 0 {
		o.Interval = d.Interval
	}
	if o.Timeout <= 0 {
		o.Timeout = d.Timeout
	}
	if o.FailuresToWithdraw <= 0 {
		o.FailuresToWithdraw = d.FailuresToWithdraw
	}
	if o.SuccessesToReturn <= 0 {
		o.SuccessesToReturn = d.SuccessesToReturn
	}
	if o.Path == "" {
		o.Path = d.Path
	}
	return o
}

// Observer is told of every check (for metrics): its target, whether it
// passed and how long it took, and of every change of state.
type Observer interface {
	Checked(target netip.AddrPort, passed bool, took time.Duration)
	Changed(target netip.AddrPort, from, to State)
}

// PingObserver, when the Observer is one too, is told of every ping: its
// target and whether the target's address replied.
type PingObserver interface {
	Pinged(target netip.AddrPort, passed bool)
}

// Checker checks a set of targets until its Run's context ends.
type Checker struct {
	opts     Options
	notify   func(netip.AddrPort)
	observer Observer

	mu      sync.Mutex
	ctx     context.Context // Run's; nil before Run
	wg      sync.WaitGroup
	targets map[netip.AddrPort]*target
	// slots hold the targets, each checked by its slot's goroutine; made
	// as targets come, up to numSlots (slots.go).
	slots []*slot
	// base is the time the slots' phases count from.
	base time.Time
}

// New returns a Checker with opts; notify is called, from the checking
// goroutines and without a lock held, each time a target's state changes.
// observer may be nil.
func New(opts Options, notify func(netip.AddrPort), observer Observer) *Checker {
	return &Checker{opts: opts.withDefaults(), notify: notify, observer: observer,
		targets: map[netip.AddrPort]*target{}, base: time.Now()}
}

// Options are the checker's options with defaults filled in.
func (c *Checker) Options() Options { return c.opts }

// Run checks the targets until ctx ends, then stops every check and
// returns.
func (c *Checker) Run(ctx context.Context) {
	c.mu.Lock()
	c.ctx = ctx
	for _, sl := range c.slots {
		if len(sl.targets) > 0 {
			c.start(sl)
		}
	}
	c.mu.Unlock()
	<-ctx.Done()
	c.wg.Wait()
}

// Set makes want the checked targets: new ones start Unknown and are checked
// at once; those not in want stop and are forgotten.
func (c *Checker) Set(want []netip.AddrPort) {
	keep := make(map[netip.AddrPort]bool, len(want))
	for _, w := range want {
		keep[w] = true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for addr, t := range c.targets {
		if !keep[addr] {
			t.slot.remove(t)
			delete(c.targets, addr)
		}
	}
	for addr := range keep {
		if _, ok := c.targets[addr]; ok {
			continue
		}
		t := &target{addr: addr, p: newProber(addr, c.opts.Path, c.opts.Timeout)}
		c.targets[addr] = t
		sl := c.slotFor()
		sl.add(t)
		if c.ctx != nil {
			c.start(sl)
		}
	}
}

// start runs sl's goroutine unless it runs; c.mu is held.
func (c *Checker) start(sl *slot) {
	if sl.running || c.ctx.Err() != nil {
		return
	}
	sl.running = true
	c.wg.Go(func() { c.runSlot(c.ctx, sl) })
}

// State is a target's state (Unknown for one not checked).
func (c *Checker) State(addr netip.AddrPort) State {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.targets[addr]; ok {
		return t.state
	}
	return Unknown
}

// Counts are the numbers of targets in each state.
func (c *Checker) Counts() map[State]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[State]int{Unknown: 0, Healthy: 0, Unhealthy: 0}
	for _, t := range c.targets {
		out[t.state]++
	}
	return out
}

// target is one checked endpoint; state, fails, passes, slot and next are
// under the Checker's mu; p is its slot goroutine's.
type target struct {
	addr          netip.AddrPort
	state         State
	fails, passes int
	slot          *slot
	// next is when the target is due: zero (at once) when new.
	next time.Time
	// httpOK is whether its last HTTP check passed; httpNext is when the
	// next is due (the checks before it are pings, HTTPInterval); a
	// failed ping sets pingFailed, and an HTTP check that passes after it
	// sets noPingUntil.
	httpOK      bool
	httpNext    time.Time
	pingFailed  bool
	noPingUntil time.Time
	p           *prober
}

// pings reports whether t's check at now is a ping: pings are on, t is
// Healthy with its last HTTP check passed, its next HTTP check is not due,
// and its address has not just failed to answer one. c.mu is held.
func (c *Checker) pings(t *target, now time.Time) bool {
	return c.opts.HTTPInterval > c.opts.Interval && t.state == Healthy && t.httpOK &&
		now.Before(t.httpNext) && !now.Before(t.noPingUntil)
}

// record counts a result, applies the hysteresis and returns the state.
func (c *Checker) record(t *target, passed bool) State {
	c.mu.Lock()
	if c.targets[t.addr] != t { // removed meanwhile
		c.mu.Unlock()
		return Unknown
	}
	from := t.state
	t.state, t.fails, t.passes = next(t.state, t.fails, t.passes, passed, c.opts)
	to := t.state
	c.mu.Unlock()
	if from == to {
		return to
	}
	if c.observer != nil {
		c.observer.Changed(t.addr, from, to)
	}
	if c.notify != nil {
		c.notify(t.addr)
	}
	return to
}

// next is the hysteresis: the state and the counts of failures and
// successes in a row after one more result.
func next(s State, fails, passes int, passed bool, o Options) (State, int, int) {
	if passed {
		fails, passes = 0, passes+1
	} else {
		fails, passes = fails+1, 0
	}
	switch {
	case s == Unknown && passed:
		s = Healthy
	case s == Unknown:
		s = Unhealthy
	case s == Healthy && fails >= o.FailuresToWithdraw:
		s = Unhealthy
	case s == Unhealthy && passes >= o.SuccessesToReturn:
		s = Healthy
	}
	return s, fails, passes
}
