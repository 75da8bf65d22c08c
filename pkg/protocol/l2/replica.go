package l2

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/announcer"
	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/l2/elect"
	"github.com/metal-ccm/metal-ccm/pkg/l2/member"
	"github.com/metal-ccm/metal-ccm/pkg/nodes"
	"github.com/metal-ccm/metal-ccm/pkg/protocol"
	"github.com/metal-ccm/metal-ccm/pkg/svcstatus"
)

// observer knows which node answers for each L2 address, so that users
// can see it on the Service: it joins the node agents' membership as an
// observer (it is never counted nor chosen) and applies to its own view the
// rule every agent applies to its own (elect.Choose). It runs in every
// replica, so that a new leader knows at once; only the leader writes
// (Lead). The agents report nothing: they need no write access.
type observer struct {
	cfg      *config.L2
	members  *member.Members // set by start
	watch    elect.Watcher
	ann      *announcer.Announcer
	services corelisters.ServiceLister
	wants    func(*v1.Service) bool

	mu     sync.Mutex
	owners map[netip.Addr]string // address -> node name; set while the view has a majority
	// conflicts are the addresses the agents report held by a host outside
	// the cluster, with the last majority view.
	conflicts map[netip.Addr]elect.Conflict
	known     bool          // owners was computed from a majority view at least once
	changed   chan struct{} // to the leader's annotation writer, coalescing
	// statusChanged: the same, to the Service status writer.
	statusChanged chan struct{}
}

// Replica builds the observer when some pool is announced with L2.
func (Protocol) Replica(cfg *config.CloudConfig, env protocol.ReplicaEnv) (protocol.Replica, error) {
	if !cfg.LoadBalancer.HasProtocol(config.ProtocolL2) {
		return nil, nil
	}
	o := newObserver(cfg, env.Nodes, env.Services, env.Wants)
	// Every eligible node of each address, up to the most the announcer
	// keeps: the owner is chosen among those whose agent is alive.
	o.ann = announcer.New(env.Informers, o.watch.Candidates, env.Wants,
		announcer.Options{MaxNextHops: announcer.MaxNextHops, Addresses: cfg.LoadBalancer.Announcer(config.ProtocolL2), InPools: cfg.LoadBalancer.InPools})
	return o, nil
}

func newObserver(cfg *config.CloudConfig, nodeLister corelisters.NodeLister, services corelisters.ServiceLister, wants func(*v1.Service) bool) *observer {
	return &observer{cfg: &cfg.L2, services: services, wants: wants,
		watch:   elect.Watcher{Nodes: nodeLister, Selects: cfg.L2.Selects, Port: cfg.L2.MemberlistPort, Candidates: elect.NewCandidates()},
		changed: make(chan struct{}, 1), statusChanged: make(chan struct{}, 1)}
}

// Start: the observer joins once the nodes are listed (Run).
func (o *observer) Start(context.Context) error { return nil }

// Run joins the membership of the agents, which they keep at the nodes'
// addresses (port l2.memberlistPort), from the address this replica
// reaches them with, on a port of its own (the agent of its own node has
// that port); then it recomputes the owners on every change until ctx
// ends, and leaves.
func (o *observer) Run(ctx context.Context) {
	go o.ann.Run(ctx)
	if err := o.start(ctx); err != nil {
		logger(ctx).Error(err, "Cannot observe the L2 agents: Services will not show which node answers")
		return
	}
	o.watch.Run(ctx, o.ann.Synced, o.decide)
	_ = o.members.Leave(time.Second)
	o.members.Shutdown()
}

func (o *observer) start(ctx context.Context) error {
	keys, err := member.ReadKeys(o.cfg.SecretFile)
	if err != nil {
		return err
	}
	bind, err := o.localAddress(ctx)
	if err != nil {
		return err
	}
	o.members, err = member.Start(ctx, member.Config{Name: observerName(), Bind: netip.AddrPortFrom(bind, 0), Keys: keys,
		Observer: true, Timing: member.DefaultTiming()})
	if err != nil {
		return fmt.Errorf("L2 membership: %w", err)
	}
	o.watch.Members = o.members
	return nil
}

// localAddress is this replica's source address toward the first node with
// an InternalIP (IPv4 first), waiting for one to be listed.
func (o *observer) localAddress(ctx context.Context) (netip.Addr, error) {
	for {
		list, _ := o.watch.Nodes.List(labels.Everything())
		for _, n := range list {
			if ip, ok := nodes.PrimaryInternalIP(n); ok {
				src, err := nodes.SourceToward(netip.AddrPortFrom(ip, 9))
				if err != nil {
					return netip.Addr{}, fmt.Errorf("the L2 membership: %w", err)
				}
				return src, nil
			}
		}
		select {
		case <-ctx.Done():
			return netip.Addr{}, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// decide records the owners of a round that sees a majority; a replica
// that sees a minority may be wrong, so the last majority view stands.
func (o *observer) decide(_ context.Context, r elect.Round) {
	if !r.Choice.Quorum {
		return
	}
	byAddr := map[netip.Addr]string{}
	for _, m := range r.Choice.Members {
		for _, a := range m.Addresses {
			byAddr[a.Unmap()] = m.Name
		}
	}
	owners := make(map[netip.Addr]string, len(r.Choice.Owners))
	for p, hop := range r.Choice.Owners {
		owners[p.Addr()] = byAddr[hop]
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.known && maps.Equal(owners, o.owners) && sameConflicts(r.Choice.Conflicts, o.conflicts) {
		return
	}
	o.owners, o.conflicts, o.known = owners, r.Choice.Conflicts, true
	for _, ch := range []chan struct{}{o.changed, o.statusChanged} {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Owner is the node that answers for addr ("" for none); ok is false until
// the observer has seen a majority of the agents.
func (o *observer) Owner(addr netip.Addr) (node string, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.owners[addr.Unmap()], o.known
}

// Announcement is which node answers for addr; ok is false until the
// observer has seen a majority of the agents.
func (o *observer) Announcement(addr netip.Addr, _ map[netip.Addr]string) (svcstatus.Announcement, bool) {
	a := svcstatus.Announcement{Addr: addr, Protocol: svcstatus.L2}
	node, ok := o.Owner(addr)
	if node != "" {
		a.Nodes = []string{node}
	}
	if c, held := o.Conflict(addr); held {
		a.Conflict = macOrUnknown(c.MAC)
	}
	return a, ok
}

func (o *observer) Changed() <-chan struct{} { return o.statusChanged }

// Stop: leaving is Run's, as ctx ends.
func (o *observer) Stop(context.Context, *config.CloudConfig, func() bool) {}

func (o *observer) OutsidePools() int { return o.ann.OutsidePools() }
func (o *observer) Resync()           { o.ann.Resync() }
func (o *observer) Collect(ch chan<- metrics.Metric) {
	ch <- metrics.NewLazyConstMetric(descConflicts, metrics.GaugeValue, float64(o.conflictCount()))
}

// observerName names this replica in the membership: unique per process.
func observerName() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("metal-ccm-%s-%d", host, os.Getpid())
}

// logger for the L2 messages.
func logger(ctx context.Context) klog.Logger { return klog.FromContext(ctx).WithName("l2") }
