package elect

import (
	"context"
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/l2/member"
)

// Membership is the agents' membership (pkg/l2/member), as a Watcher uses it.
type Membership interface {
	Alive() []member.Member
	Changed() <-chan struct{}
	Join(seeds []netip.AddrPort) error
}

// Witness is the two-node witness (pkg/l2/witness) as the watcher uses it:
// wanted while exactly two agents are expected.
type Witness interface {
	Want(bool)
	Held() bool
	Changed() <-chan struct{}
}

// WantsWitness: the member of v is one of exactly two expected agents, and
// its node can carry addresses (its gossiped fitness: kube-proxy passes,
// an interface on a segment is up). A node that cannot forward lets the
// witness go, so that a holder cut from its peer and its clients but not
// from the API server does not keep the addresses silent; a node out of
// l2.nodeSelector never takes it.
func WantsWitness(v View) bool {
	if len(v.Expected) != 2 || v.Self == nil {
		return false
	}
	for _, m := range Bound(v.Alive, v.Expected) {
		if !slices.ContainsFunc(m.Addresses, func(a netip.Addr) bool { return slices.Contains(v.Self, a.Unmap()) }) {
			continue
		}
		return m.Fitness.Forwards && (m.Fitness.AnyAddress || len(m.Fitness.Reach) > 0)
	}
	return false
}

// Recheck bounds how long a change the watcher is not told of (a node's
// Ready condition, which the announcer's handlers do not pass on) waits to
// be seen; JoinEvery bounds how often it dials the agents it does not see.
const (
	Recheck   = time.Second
	JoinEvery = 5 * time.Second
)

// Watcher is the one loop over the L2 membership: every change of the
// candidates or of the membership, and every Recheck, it takes a View of
// the nodes and the live agents, joins the expected agents it does not see,
// and applies Choose. A node agent runs it as a member (Self set) and
// answers for what it owns; the replicas' observer runs it as a watcher
// (Self nil) and shows who owns what.
type Watcher struct {
	Members    Membership
	Nodes      corelisters.NodeLister
	Selects    func(labels.Set) bool
	Port       uint16       // the agents' membership port
	Self       []netip.Addr // the member's own addresses; nil for an observer
	Candidates *Candidates  // the announcer's Backend
	Witness    Witness      // the two-node witness of a member; nil: none

	lastJoin time.Time
	joining  atomic.Bool // a Join runs
	nodes    nodeCache
	last     *lastRound
}

// lastRound is the previous round and what it chose from: a round whose
// inputs are the same takes its choice again (Choose at 5,000 nodes and
// 1,000 addresses costs milliseconds, and the nodes' agents and the
// replicas run a round every second).
type lastRound struct {
	version uint64 // the candidates'
	alive   []member.Member
	witness bool
	round   Round
}

// Round is what one round of the loop saw and chose.
type Round struct {
	View   View
	Choice Choice
}

// Run calls decide with every round, once synced says the candidates are
// complete, until ctx ends.
func (w *Watcher) Run(ctx context.Context, synced func() bool, decide func(context.Context, Round)) {
	tick := time.NewTicker(Recheck)
	defer tick.Stop()
	var witness <-chan struct{} // nil: never
	if w.Witness != nil {
		witness = w.Witness.Changed()
	}
	for {
		if synced() {
			if r, ok := w.Round(ctx); ok {
				decide(ctx, r)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-w.Candidates.Changed():
		case <-w.Members.Changed():
		case <-witness:
		case <-tick.C:
		}
	}
}

// Round takes the view of the moment, joins the agents it misses, and
// chooses; ok is false when the nodes cannot be listed. The Round is
// shared with later ones: never modified.
func (w *Watcher) Round(ctx context.Context) (Round, bool) {
	list, err := w.Nodes.List(labels.Everything())
	if err != nil {
		return Round{}, false
	}
	nodesChanged := w.nodes.refresh(list, w.Selects)
	v := View{Self: w.Self, Alive: w.Members.Alive(), Expected: w.nodes.expected}
	if w.Witness != nil {
		w.Witness.Want(WantsWitness(v))
		v.Witness = w.Witness.Held()
	}
	w.join(ctx, v.Alive)
	if l := w.last; l != nil && !nodesChanged && l.version == w.Candidates.Version() && l.witness == v.Witness &&
		slices.EqualFunc(l.alive, v.Alive, sameMember) {
		return l.round, true
	}
	var version uint64
	v.Candidates, version = w.Candidates.Snapshot()
	r := Round{View: v, Choice: Choose(v)}
	w.last = &lastRound{version: version, alive: v.Alive, witness: v.Witness, round: r}
	return r, true
}

// sameMember: a and b say the same.
func sameMember(a, b member.Member) bool {
	return a.Name == b.Name && a.From == b.From && slices.Equal(a.Addresses, b.Addresses) && a.Fitness.Equal(b.Fitness)
}

// join dials the expected agents the membership does not show, at most
// every JoinEvery: a new node's agent, and both sides of a healed
// partition, find each other without a fixed seed list. It dials in the
// background: the node that just died is among the seeds, and its dial
// waits for the TCP timeout, which must not hold up the takeover of its
// addresses.
func (w *Watcher) join(ctx context.Context, alive []member.Member) {
	if time.Since(w.lastJoin) < JoinEvery || w.joining.Load() {
		return
	}
	w.lastJoin = time.Now()
	seeds := seedsFrom(w.nodes.byNode, alive, w.Port, w.Self)
	if len(seeds) == 0 {
		return
	}
	w.joining.Store(true)
	go func() {
		defer w.joining.Store(false)
		if err := w.Members.Join(seeds); err != nil {
			// Agents not started yet, or nodes down: the next round retries.
			klog.FromContext(ctx).V(2).Info("Some L2 agents not reached", "err", err)
		}
	}()
}
