package l2

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/announcer"
	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/healthcheck"
	l2resp "github.com/metal-ccm/metal-ccm/pkg/l2"
	"github.com/metal-ccm/metal-ccm/pkg/l2/elect"
	"github.com/metal-ccm/metal-ccm/pkg/l2/member"
	"github.com/metal-ccm/metal-ccm/pkg/l2/witness"
	"github.com/metal-ccm/metal-ccm/pkg/nodes"
	"github.com/metal-ccm/metal-ccm/pkg/protocol"
)

// leaveTimeout bounds how long a stopping agent tells the others it leaves,
// so that they take its addresses over at once instead of after the
// detection time.
const leaveTimeout = time.Second

// answerer answers ARP and Neighbor Solicitations for a set of addresses
// (pkg/l2).
type answerer interface {
	SetAddresses(ctx context.Context, addrs []netip.Addr) error
	Announce(ctx context.Context, addrs []netip.Addr)
}

// agent is L2 in a node agent: the announcer (over every node) tells it
// each L2 address's eligible nodes, and it answers for the addresses its
// node owns (elect.Choose over its view of the membership).
type agent struct {
	watch     elect.Watcher
	answerer  answerer
	ann       *announcer.Announcer
	members   *member.Members
	responder *l2resp.Responder
	fitness   *fitness
	conflicts *conflicts
	witness   *witness.Witness // nil: none
	// holds: with l2.failback Sticky, this agent tells the addresses it
	// has answered for a while, and the others leave them with it
	// (elect.Choose); nil with Rebalance.
	holds *holds

	// For status and metrics, written by decide.
	answering atomic.Int64
	quorum    atomic.Bool
	seen      atomic.Int64
	takeovers atomic.Int64
	ignored   atomic.Int64 // live members that do not count (elect.Bound)
	synced    atomic.Bool

	mine     []netip.Addr
	members0 []string // the names of the live agents at the last round
	failing  string   // the last SetAddresses error, logged once
}

// OnNodes: when some pool is announced with L2.
func (Protocol) OnNodes(cfg *config.CloudConfig) bool {
	return cfg.LoadBalancer.HasProtocol(config.ProtocolL2)
}

// Agent joins the L2 agents' membership and builds the responder and the
// announcer of every L2 address's eligible nodes, when some pool is
// announced with L2.
func (Protocol) Agent(ctx context.Context, cfg *config.CloudConfig, env protocol.AgentEnv) (protocol.Agent, error) {
	if !(Protocol{}).OnNodes(cfg) {
		return nil, nil
	}
	l2cfg := &cfg.L2
	bind, _ := nodes.PrimaryInternalIP(env.Node) // the agent waited for one
	self := nodes.InternalIPs(env.Node)
	if err := l2resp.RaiseNetRaw(); err != nil {
		return nil, err
	}
	keys, err := member.ReadKeys(l2cfg.SecretFile)
	if err != nil {
		return nil, err
	}
	members, err := member.Start(ctx, member.Config{
		Name: env.Node.Name, Addresses: self, Bind: netip.AddrPortFrom(bind, l2cfg.MemberlistPort),
		Keys: keys, Timing: member.DefaultTiming(),
	})
	if err != nil {
		return nil, fmt.Errorf("L2 membership: %w", err)
	}
	inL2 := func(p netip.Prefix) bool { return cfg.LoadBalancer.PoolsOverlap(p, config.ProtocolL2) }
	cg := newConflicts(func() ([]net.HardwareAddr, error) { return l2resp.ReachMACs(l2cfg.Interfaces, inL2, member.MaxMACs) },
		func(f member.Fitness) error { return members.SetFitness(f, leaveTimeout) })
	responder := l2resp.New(l2resp.Options{Interfaces: l2cfg.Interfaces, Refresh: l2resp.DefaultRefresh, Peer: cg.isPeer})
	cg.source = responder
	a := newAgent(self, members, responder, corelisters.NewNodeLister(env.Informers.Nodes.GetIndexer()), l2cfg)
	a.members, a.responder, a.conflicts = members, responder, cg
	a.fitness = newFitness(healthChecks(cfg), netip.AddrPortFrom(bind, cfg.HealthChecks.Port),
		func() (bool, []netip.Prefix, error) {
			return l2resp.Reach(l2cfg.Interfaces, func(p netip.Prefix) bool { return cfg.LoadBalancer.PoolsOverlap(p, config.ProtocolL2) })
		},
		cg.setFitness)
	a.fitness.stale = env.ViewStale
	if l2cfg.Failback == config.FailbackSticky {
		a.holds = newHolds(logger(ctx), cg.setHolds, func(err error) {
			logger(ctx).V(2).Info("Gossiping the addresses this node answers for", "err", err)
		})
	}
	if env.L2Witness != nil {
		a.witness, a.watch.Witness = env.L2Witness, env.L2Witness
	}
	// Every eligible node of each address, up to the most the announcer
	// keeps: the owner is chosen among those of them whose agent is alive.
	a.ann = announcer.New(env.Informers, a.watch.Candidates, env.Wants,
		announcer.Options{MaxNextHops: announcer.MaxNextHops, Addresses: env.Addresses(config.ProtocolL2), InPools: env.InPools})
	klog.FromContext(ctx).Info("Answering ARP and Neighbor Solicitations for the L2 addresses this node owns",
		"membership", netip.AddrPortFrom(bind, l2cfg.MemberlistPort), "interfaces", l2cfg.Interfaces, "keys", len(keys),
		"kubeProxyCheck", a.fitness.checked())
	return a, nil
}

func newAgent(self []netip.Addr, members elect.Membership, answerer answerer, nodeLister corelisters.NodeLister, cfg *config.L2) *agent {
	return &agent{answerer: answerer, watch: elect.Watcher{Members: members, Nodes: nodeLister, Selects: cfg.Selects, Port: cfg.MemberlistPort,
		Self: self, Candidates: elect.NewCandidates()}}
}

// Run answers until ctx ends, then falls silent and leaves the membership.
func (a *agent) Run(ctx context.Context) {
	logger := logger(ctx)
	go func() {
		if err := a.responder.Run(ctx); err != nil {
			logger.Error(err, "L2 responder stopped")
		}
	}()
	go a.ann.Run(ctx)
	go a.fitness.Run(ctx)
	go a.conflicts.Run(ctx)
	if a.witness != nil {
		go a.witness.Run(ctx)
	}
	a.answer(ctx)
	if a.holds != nil {
		a.holds.stop()
	}
	if err := a.members.Leave(leaveTimeout); err != nil {
		logger.V(2).Info("Leaving the L2 membership", "err", err)
	}
	a.members.Shutdown()
}

// answer decides and answers until ctx ends, then falls silent: another
// node takes the addresses over.
func (a *agent) answer(ctx context.Context) {
	ctx = klog.NewContext(ctx, logger(ctx))
	a.watch.Run(ctx, a.ann.Synced, a.decide)
	_ = a.answerer.SetAddresses(context.WithoutCancel(ctx), nil)
}

func (a *agent) decide(ctx context.Context, r elect.Round) {
	logger := klog.FromContext(ctx)
	c, alive := r.Choice, r.Choice.Members
	if c.Quorum != a.quorum.Load() {
		logger.Info("Majority of the L2 agents", "seen", c.Quorum, "alive", len(alive), "expected", len(r.View.Expected), "witness", r.View.Witness)
	}
	if a.fitness != nil {
		a.fitness.setWitness(r.View.Witness)
	}
	a.quorum.Store(c.Quorum)
	a.seen.Store(int64(len(alive)))
	a.ignored.Store(int64(c.Ignored))
	if a.conflicts != nil {
		a.conflicts.setPeers(elect.MACs(c.Members), time.Now())
	}
	for _, addr := range c.Mine {
		if !slices.Contains(a.mine, addr) {
			a.takeovers.Add(1)
			logger.Info("Answering for the address", "address", addr)
		}
	}
	for _, addr := range a.mine {
		if !slices.Contains(c.Mine, addr) {
			logger.Info("No longer answering for the address", "address", addr)
		}
	}
	kept := slices.DeleteFunc(slices.Clone(c.Mine), func(addr netip.Addr) bool { return !slices.Contains(a.mine, addr) })
	a.mine = c.Mine
	err := a.answerer.SetAddresses(ctx, c.Mine)
	if a.grew(alive) && len(kept) > 0 {
		// An agent came (back): a healed partition, or a node the others
		// had given up. While apart, its node may have answered for some of
		// ours, and clients that learned its MAC keep it for as long as it
		// forwards their traffic; our announcements set them right. New
		// addresses were announced by SetAddresses already.
		logger.V(2).Info("Announcing the addresses again for an agent that joined", "addresses", len(kept))
		a.answerer.Announce(ctx, kept)
	}
	if msg := errString(err); msg != a.failing {
		a.failing = msg
		if err != nil {
			// SetAddresses answers for the others all the same.
			logger.Error(err, "Cannot answer for every address")
		}
	}
	if a.holds != nil {
		// Told after answering: another agent that still holds one of
		// them (a takeover it has not seen) gives way by hashing.
		if err := a.holds.set(c.Mine); err != nil {
			logger.V(2).Info("Gossiping the addresses this node answers for", "err", err)
		}
	}
	a.answering.Store(int64(len(c.Mine)))
	a.synced.Store(true)
	if a.fitness != nil {
		a.fitness.Decided()
	}
}

// grew records the live agents and says whether one of them was not
// there at the last call.
func (a *agent) grew(alive []member.Member) bool {
	names := make([]string, 0, len(alive))
	for _, m := range alive {
		names = append(names, m.Name)
	}
	slices.Sort(names)
	prev := a.members0
	a.members0 = names
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

// Ready: the agent has decided once on a complete view of the addresses,
// and its node can carry them (kube-proxy passes its check).
func (a *agent) Ready() error {
	if !a.synced.Load() {
		return protocol.ErrStarting
	}
	return a.fitness.Ready()
}

// healthChecks are the options of the check of the node's own kube-proxy,
// nil when healthChecks.enabled is false.
func healthChecks(cfg *config.CloudConfig) *healthcheck.Options {
	if o, on := healthcheck.FromConfig(cfg.HealthChecks); on {
		o.HTTPInterval = 0 // its own node: a ping tells nothing
		return &o
	}
	return nil
}

func (a *agent) OutsidePools() int { return a.ann.OutsidePools() }

// Resync looks at every Service again: a BGP pool changed (an L2 pool's
// change restarts the agent), which may move an address out of the pools.
func (a *agent) Resync() { a.ann.Resync() }

// Stop: nothing is left once Run returns (it left the membership, so the
// others take the addresses over at once, whether or not the node comes
// back).
func (a *agent) Stop(context.Context, bool) {}

// Collect reports the addresses answered, takeovers and the view.
func (a *agent) Collect(ch chan<- metrics.Metric) {
	majority := 0.0
	if a.quorum.Load() {
		majority = 1
	}
	ch <- metrics.NewLazyConstMetric(descAnswering, metrics.GaugeValue, float64(a.answering.Load()))
	ch <- metrics.NewLazyConstMetric(descTakeovers, metrics.CounterValue, float64(a.takeovers.Load()))
	ch <- metrics.NewLazyConstMetric(descMembers, metrics.GaugeValue, float64(a.seen.Load()))
	ch <- metrics.NewLazyConstMetric(descMajority, metrics.GaugeValue, majority)
	ch <- metrics.NewLazyConstMetric(descIgnored, metrics.GaugeValue, float64(a.ignored.Load()))
	forwards := 0.0
	if a.fitness.Forwards() {
		forwards = 1
	}
	ch <- metrics.NewLazyConstMetric(descForwards, metrics.GaugeValue, forwards)
	ch <- metrics.NewLazyConstMetric(descAgentConflicts, metrics.GaugeValue, float64(a.conflicts.count.Load()))
}

// errString is err's text, "" for nil.
func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
