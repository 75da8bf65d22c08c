package agent

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/l2/witness"
	"github.com/metal-ccm/metal-ccm/pkg/nodes"
	"github.com/metal-ccm/metal-ccm/pkg/protocol"
	_ "github.com/metal-ccm/metal-ccm/pkg/protocol/builtin" // the protocols
)

// Errors of Run.
var (
	// ErrNotNodes is returned by Run when the agent has nothing to do: no
	// protocol gives the node agents work (the replicas announce over BGP,
	// with bgp.announceFrom Replicas or no peers, and no pool is announced
	// with L2).
	ErrNotNodes = errors.New("bgp.announceFrom is not Nodes (or there are no bgp.peers) and no pool is announced with L2: nothing to announce from this node")
	// ErrNoInternalIP is returned for a node without an InternalIP: the
	// agents' BGP router ID and L2 membership use it (IPv4 first, else
	// IPv6: nodes.PrimaryInternalIP).
	ErrNoInternalIP = errors.New("node has no InternalIP")
)

// nodeWait bounds how long the agent waits for its Node to have an IPv4
// InternalIP (a new node registers after its agent's pod may start).
const nodeWait = 5 * time.Minute

// Agent announces its node's LoadBalancer addresses, with each protocol
// (pkg/protocol) the config gives the node agents.
type Agent struct {
	Config   *config.CloudConfig
	Client   *Client
	NodeName string
	// L2Witness is the Lease of the two-node L2 witness (pkg/l2/witness),
	// which the agent may get and update; zero: no witness.
	L2Witness types.NamespacedName
	// DaemonSet is the agent's own DaemonSet, read when the agent stops to
	// tell a rolling update (graceful restart) from the agent removed from
	// the node (a Cease); zero: only the node decides (stopping.go).
	DaemonSet types.NamespacedName

	roles atomic.Pointer[[]protocol.Agent]   // set once Run has built them
	live  atomic.Pointer[config.CloudConfig] // the pools of the moment: Config, then Reload's
	idle  atomic.Bool                        // Run found nothing to announce
}

// Run announces until ctx ends.
func (a *Agent) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithValues("node", a.NodeName)
	ctx = klog.NewContext(ctx, logger)
	if !a.hasWork() {
		a.idle.Store(true)
		return ErrNotNodes
	}
	node, err := a.waitNode(ctx)
	if err != nil {
		return err
	}
	fresh := newFreshness(logger)
	inf := a.Client.informers(fresh)
	a.live.CompareAndSwap(nil, a.Config)
	env := protocol.AgentEnv{Node: node, Informers: inf, Wants: a.Config.LoadBalancer.Rule().Wants, ViewStale: fresh.Stale,
		Addresses: func(p config.Protocol) func(netip.Addr) bool {
			return func(addr netip.Addr) bool { return a.live.Load().LoadBalancer.Announces(addr, p) }
		},
		InPools: func(addr netip.Addr) bool { return a.live.Load().LoadBalancer.InPools(addr) },
	}
	if a.L2Witness.Name != "" {
		env.L2Witness = witness.New(a.Client.Leases(a.L2Witness.Namespace), a.L2Witness.Name, a.NodeName, witness.DefaultTiming())
	}
	var roles []protocol.Agent
	for _, p := range protocol.All() {
		r, err := p.Agent(ctx, a.Config, env)
		if err != nil {
			return err
		}
		if r != nil {
			roles = append(roles, r)
		}
	}
	a.roles.Store(&roles)
	a.publishSessions(ctx, roles)
	stopped := runInformers(ctx, inf)
	var wg sync.WaitGroup
	for _, r := range roles {
		wg.Go(func() { r.Run(ctx) })
	}
	wg.Go(func() { a.returnInitialHeap(ctx) })
	wg.Wait()
	stop := a.stopping(ctx)
	logStop(ctx, stop)
	for _, r := range roles {
		r.Stop(context.WithoutCancel(ctx), stop.Leave)
	}
	stopped.Wait()
	return nil
}

// Reload makes updated's pools the agent's, without a restart: the caller
// checked config.AgentsApplyLive. Every role looks at every Service again.
func (a *Agent) Reload(updated *config.CloudConfig) {
	a.live.Store(updated)
	if roles := a.roles.Load(); roles != nil {
		for _, r := range *roles {
			r.Resync()
		}
	}
}

// returnInitialHeap collects once every role is ready and returns the
// freed heap to the system. The initial lists of every Node, Service and
// EndpointSlice and their decoding grow the heap to about twice what stays
// live; the ready agent then allocates so little that no collection runs
// for minutes, and the runtime would keep those pages in the agent's RSS,
// on every node (docs/performance.md, scenario 0b).
func (a *Agent) returnInitialHeap(ctx context.Context) {
	err := wait.PollUntilContextCancel(ctx, time.Second, false, func(context.Context) (bool, error) {
		return a.Ready() == nil, nil
	})
	if err != nil {
		return // ended before ready
	}
	debug.FreeOSMemory()
	klog.FromContext(ctx).V(2).Info("Ready: the heap of the initial lists returned to the system")
}

// hasWork reports whether some protocol gives the node agents work.
func (a *Agent) hasWork() bool {
	for _, p := range protocol.All() {
		if p.OnNodes(a.Config) {
			return true
		}
	}
	return false
}

// waitNode waits until the agent's Node exists with an InternalIP.
func (a *Agent) waitNode(ctx context.Context) (*v1.Node, error) {
	var node *v1.Node
	err := wait.PollUntilContextTimeout(ctx, time.Second, nodeWait, true, func(ctx context.Context) (bool, error) {
		n := &v1.Node{}
		if err := a.Client.Nodes.Get(ctx, a.NodeName, n); err != nil {
			klog.FromContext(ctx).V(2).Info("Waiting for the node", "node", a.NodeName, "err", err)
			return false, nil
		}
		node = n
		_, ok := nodes.PrimaryInternalIP(n)
		return ok, nil
	})
	if err != nil {
		if node != nil {
			return nil, fmt.Errorf("node %s: %w", a.NodeName, ErrNoInternalIP)
		}
		return nil, fmt.Errorf("node %s not found: %w", a.NodeName, err)
	}
	return node, nil
}

// Ready reports whether the agent announces what it should: every role's
// Ready (its first sync done; with routes.enabled, the node's pod routes
// announced). The chart's readiness probe asks it (/readyz). An idle agent
// (nothing to announce from nodes) is ready.
func (a *Agent) Ready() error {
	if a.idle.Load() {
		return nil
	}
	roles := a.roles.Load()
	if roles == nil {
		return protocol.ErrStarting
	}
	for _, r := range *roles {
		if err := r.Ready(); err != nil {
			return err
		}
	}
	return nil
}

// OutsidePools is how many addresses of the Services' status the agent
// leaves out now for being in no pool (the most any role counts: each
// looks at every Service).
func (a *Agent) OutsidePools() int {
	n := 0
	if roles := a.roles.Load(); roles != nil {
		for _, r := range *roles {
			n = max(n, r.OutsidePools())
		}
	}
	return n
}

// Describe sends the descriptors of every protocol's agent metrics.
func Describe(ch chan<- *metrics.Desc) {
	for _, p := range protocol.All() {
		for _, d := range p.AgentMetrics() {
			ch <- d
		}
	}
}

// Collect sends the metrics of the roles that run.
func (a *Agent) Collect(ch chan<- metrics.Metric) {
	if roles := a.roles.Load(); roles != nil {
		for _, r := range *roles {
			r.Collect(ch)
		}
	}
}
