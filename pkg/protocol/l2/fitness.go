package l2

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/healthcheck"
	"github.com/metal-ccm/metal-ccm/pkg/l2/member"
)

// reachEvery is how often an agent looks at its interfaces again: an
// interface that goes down, or an address added to one, is told to the
// others within this time.
const reachEvery = 5 * time.Second

// ErrCannotForward is the agent's readiness while its node cannot carry
// L2 addresses: the others answer for them.
var ErrCannotForward = errors.New("this node cannot carry L2 addresses")

// fitness keeps what this agent says of its node in the membership
// (member.Fitness): whether kube-proxy passes its health check, and which
// segments the responder reaches. An agent checks only its own node, and
// the others read the answer from the same gossip as its liveness: agents
// that checked each other could disagree, and two of them would answer.
type fitness struct {
	// checker checks kube-proxy's /healthz on target; nil when
	// healthChecks.enabled is false (the node is taken to forward).
	checker *healthcheck.Checker
	target  netip.AddrPort
	changed chan struct{}
	// reach is the responder's reach now (l2.Reach).
	reach func() (anyAddress bool, reach []netip.Prefix, err error)
	// set gossips a new fitness.
	set func(member.Fitness) error

	// stale reports whether the agent's API view has been cut off too long
	// (AgentEnv.ViewStale); nil: never.
	stale func() bool
	// decided: the agent has decided once on a synced view of the
	// addresses and nodes (Decided).
	decided  atomic.Bool
	staleNow atomic.Bool
	witness  atomic.Bool // the agent holds the two-node witness's vote
	now      atomic.Pointer[member.Fitness]
	reachErr string            // the last reach error, logged once
	state    healthcheck.State // the last state logged
	noReach  bool              // no segment, logged once
}

func newFitness(opts *healthcheck.Options, target netip.AddrPort, reach func() (bool, []netip.Prefix, error), set func(member.Fitness) error) *fitness {
	f := &fitness{target: target, reach: reach, set: set, changed: make(chan struct{}, 1)}
	if opts != nil {
		f.checker = healthcheck.New(*opts, func(netip.AddrPort) { f.poke() }, nil)
		f.checker.Set([]netip.AddrPort{target})
	}
	f.now.Store(&member.Fitness{})
	return f
}

// Decided tells that the agent has decided once on a synced view, with its
// responder set up: until then its node does not count as forwarding, so
// that a returning agent takes addresses back only once it would answer
// for them from a complete view (its informers synced), not as soon as
// it has joined the membership.
func (f *fitness) Decided() {
	if !f.decided.Swap(true) {
		f.poke()
	}
}

// setWitness tells whether the agent holds the two-node witness's vote,
// for the observers to read in its metadata.
func (f *fitness) setWitness(held bool) {
	if f.witness.Swap(held) != held {
		f.poke()
	}
}

// poke makes Run update at once.
func (f *fitness) poke() {
	select {
	case f.changed <- struct{}{}:
	default:
	}
}

// Run checks and gossips until ctx ends.
func (f *fitness) Run(ctx context.Context) {
	if f.checker != nil {
		go f.checker.Run(ctx)
	}
	tick := time.NewTicker(reachEvery)
	defer tick.Stop()
	for {
		f.update(ctx)
		select {
		case <-ctx.Done():
			return
		case <-f.changed:
		case <-tick.C:
		}
	}
}

// update takes the node's fitness of the moment and gossips it if it
// changed.
func (f *fitness) update(ctx context.Context) {
	logger := klog.FromContext(ctx)
	stale := f.stale != nil && f.stale()
	if stale != f.staleNow.Swap(stale) {
		if stale {
			logger.Info("This agent's view of the API server is stale: the other nodes answer for its L2 addresses")
		} else {
			logger.Info("This agent's view of the API server is fresh again")
		}
	}
	next := member.Fitness{Forwards: f.decided.Load() && !stale && (f.checker == nil || f.checker.State(f.target) == healthcheck.Healthy),
		Witness: f.witness.Load()}
	anyAddr, reach, err := f.reach()
	if msg := errString(err); msg != f.reachErr {
		f.reachErr = msg
		if err != nil {
			logger.Error(err, "Cannot list the interfaces to answer on; the others keep the last segments this node told")
		}
	}
	if err != nil {
		prev := f.now.Load()
		next.AnyAddress, next.Reach = prev.AnyAddress, prev.Reach
	} else {
		next.AnyAddress, next.Reach = anyAddr, reach
	}
	f.log(logger, next)
	if next.Equal(*f.now.Load()) {
		return
	}
	logger.V(2).Info("Telling the L2 agents this node's fitness", "fitness", next)
	if err := f.set(next); err != nil {
		// Not taken: the next update tries again, as f.now stays.
		logger.Info("Gossiping this node's fitness, to be tried again", "err", err)
		return
	}
	f.now.Store(&next)
}

// log says once each time kube-proxy's check turns, and when the node
// reaches no segment of an L2 pool.
func (f *fitness) log(logger klog.Logger, next member.Fitness) {
	if f.checker != nil {
		if st := f.checker.State(f.target); st != healthcheck.Unknown && st != f.state {
			f.state = st
			if st == healthcheck.Healthy {
				logger.Info("kube-proxy passes its health check: this node may answer for L2 addresses", "target", f.target)
			} else {
				logger.Info("kube-proxy fails its health check: the other nodes answer for this node's L2 addresses", "target", f.target)
			}
		}
	}
	if none := !next.AnyAddress && len(next.Reach) == 0; none != f.noReach {
		f.noReach = none
		if none {
			logger.Info("No up Ethernet interface of this node is on the segment of an L2 pool: the other nodes answer for its L2 addresses")
		}
	}
}

// checked is what is checked, for the log: kube-proxy's /healthz, or
// "off".
func (f *fitness) checked() string {
	if f.checker == nil {
		return "off"
	}
	return "http://" + f.target.String() + f.checker.Options().Path
}

// Forwards: the node's kube-proxy passes its check (or is not checked).
func (f *fitness) Forwards() bool { return f.now.Load().Forwards }

// Ready is nil while kube-proxy passes its check. A node that reaches no
// segment of an L2 pool is ready all the same: a rack without the L2
// segment is a network's shape, not a fault, and an agent that never
// turns ready would stop the rolling updates of the DaemonSet.
func (f *fitness) Ready() error {
	if f.Forwards() {
		return nil
	}
	if !f.decided.Load() {
		return fmt.Errorf("%w: not decided yet", ErrCannotForward)
	}
	if f.staleNow.Load() {
		return fmt.Errorf("%w: its view of the API server is stale", ErrCannotForward)
	}
	return fmt.Errorf("%w: kube-proxy fails its health check at %s (or has not been checked yet)", ErrCannotForward, f.target)
}
