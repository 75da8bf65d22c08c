package agent

import (
	"context"
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/l2/elect"
	"github.com/metal-ccm/metal-ccm/pkg/l2/member"
)

// l2Members is the agents' membership (pkg/l2/member).
type l2Members interface {
	Alive() []member.Member
	Changed() <-chan struct{}
	Join(seeds []netip.AddrPort) error
}

// l2Answerer answers ARP and Neighbor Solicitations for a set of addresses
// (pkg/l2).
type l2Answerer interface {
	SetAddresses(ctx context.Context, addrs []netip.Addr) error
	Announce(ctx context.Context, addrs []netip.Addr)
}

// l2Recheck bounds how long a change the loop was not told of (a node's
// Ready condition, which the announcer's handlers do not pass on) waits to
// be seen; joinEvery bounds how often the agent dials the agents it does
// not see.
const (
	l2Recheck = time.Second
	joinEvery = 5 * time.Second
)

// l2 is the node agent's L2 announcement: the announcer (over every node)
// tells it each L2 address's eligible nodes through SetPaths, and it
// answers for the addresses its node owns (elect.Choose).
type l2 struct {
	self     []netip.Addr
	members  l2Members
	answerer l2Answerer
	nodes    corelisters.NodeLister
	selects  func(labels.Set) bool
	port     uint16

	candidates *elect.Candidates // the announcer's Backend

	// For status and metrics (Stats), written by run.
	answering atomic.Int64
	quorum    atomic.Bool
	seen      atomic.Int64
	takeovers atomic.Int64
	synced    atomic.Bool

	lastJoin time.Time
	joining  atomic.Bool // a Join runs
	mine     []netip.Addr
	members0 []string // the names of the live agents at the last sync
	failing  string   // the last SetAddresses error, logged once
}

func newL2(self []netip.Addr, members l2Members, answerer l2Answerer, nodes corelisters.NodeLister, selects func(labels.Set) bool, port uint16) *l2 {
	return &l2{self: self, members: members, answerer: answerer, nodes: nodes, selects: selects, port: port,
		candidates: elect.NewCandidates()}
}

// run decides and answers until ctx ends, on every change of the
// addresses, of the membership, and every l2Recheck.
func (l *l2) run(ctx context.Context, synced func() bool) {
	logger := klog.FromContext(ctx).WithName("l2")
	ctx = klog.NewContext(ctx, logger)
	tick := time.NewTicker(l2Recheck)
	defer tick.Stop()
	for {
		if synced() {
			l.sync(ctx)
		}
		select {
		case <-ctx.Done():
			// Fall silent: another node takes the addresses over.
			_ = l.answerer.SetAddresses(context.WithoutCancel(ctx), nil)
			return
		case <-l.candidates.Changed():
		case <-l.members.Changed():
		case <-tick.C:
		}
	}
}

func (l *l2) sync(ctx context.Context) {
	logger := klog.FromContext(ctx)
	list, err := l.nodes.List(labels.Everything())
	if err != nil {
		return
	}
	view := elect.View{Candidates: l.candidates.Snapshot(), Self: l.self}
	view.Alive = l.members.Alive()
	view.Expected = elect.ExpectedAgents(list, l.selects)
	l.join(ctx, list, view.Alive)

	c := elect.Choose(view)
	if c.Quorum != l.quorum.Load() {
		logger.Info("Majority of the L2 agents", "seen", c.Quorum, "alive", len(view.Alive), "expected", len(view.Expected))
	}
	l.quorum.Store(c.Quorum)
	l.seen.Store(int64(len(view.Alive)))
	for _, a := range c.Mine {
		if !slices.Contains(l.mine, a) {
			l.takeovers.Add(1)
			logger.Info("Answering for the address", "address", a)
		}
	}
	for _, a := range l.mine {
		if !slices.Contains(c.Mine, a) {
			logger.Info("No longer answering for the address", "address", a)
		}
	}
	kept := slices.DeleteFunc(slices.Clone(c.Mine), func(a netip.Addr) bool { return !slices.Contains(l.mine, a) })
	l.mine = c.Mine
	err = l.answerer.SetAddresses(ctx, c.Mine)
	if l.grew(view.Alive) && len(kept) > 0 {
		// An agent came (back): a healed partition, or a node the others
		// had given up. While apart, its node may have answered for some of
		// ours, and clients that learned its MAC keep it for as long as it
		// forwards their traffic; our announcements set them right. New
		// addresses were announced by SetAddresses already.
		logger.V(2).Info("Announcing the addresses again for an agent that joined", "addresses", len(kept))
		l.answerer.Announce(ctx, kept)
	}
	if msg := errString(err); msg != l.failing {
		l.failing = msg
		if err != nil {
			// SetAddresses answers for the others all the same.
			logger.Error(err, "Cannot answer for every address")
		}
	}
	l.answering.Store(int64(len(c.Mine)))
	l.synced.Store(true)
}

// join dials the expected agents the membership does not show, at most
// every joinEvery: a new node's agent, and both sides of a healed
// partition, find each other without a fixed seed list. It dials in the
// background: the node that just died is among the seeds, and its dial
// waits for the TCP timeout, which must not hold up the takeover of its
// addresses.
func (l *l2) join(ctx context.Context, list []*v1.Node, alive []member.Member) {
	if time.Since(l.lastJoin) < joinEvery || l.joining.Load() {
		return
	}
	seeds := elect.Seeds(list, alive, l.selects, l.port, l.self)
	if len(seeds) == 0 {
		return
	}
	l.lastJoin = time.Now()
	l.joining.Store(true)
	go func() {
		defer l.joining.Store(false)
		if err := l.members.Join(seeds); err != nil {
			// Agents not started yet, or nodes down: the next round retries.
			klog.FromContext(ctx).V(2).Info("Some L2 agents not reached", "err", err)
		}
	}()
}

// grew records the live agents and says whether one of them was not
// there at the last call.
func (l *l2) grew(alive []member.Member) bool {
	names := make([]string, 0, len(alive))
	for _, m := range alive {
		names = append(names, m.Name)
	}
	slices.Sort(names)
	prev := l.members0
	l.members0 = names
	if prev == nil {
		return false
	}
	for _, n := range names {
		if _, found := slices.BinarySearch(prev, n); !found {
			return true
		}
	}
	return false
}

// L2Stats are the L2 announcement's state, for /metrics.
type L2Stats struct {
	Answering, Members, Takeovers int64
	Quorum                        bool
}

// L2Stats are the L2 announcement's state; false when the agent answers
// for no L2 pool.
func (a *Agent) L2Stats() (L2Stats, bool) {
	l := a.l2.Load()
	if l == nil {
		return L2Stats{}, false
	}
	return L2Stats{Answering: l.answering.Load(), Members: l.seen.Load(), Takeovers: l.takeovers.Load(), Quorum: l.quorum.Load()}, true
}

// errString is err's text, "" for nil.
func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
