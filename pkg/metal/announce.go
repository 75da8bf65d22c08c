package metal

import (
	"context"
	"fmt"
	"net/netip"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/metal-ccm/metal-ccm/pkg/announcer"
	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/protocol"
	_ "github.com/metal-ccm/metal-ccm/pkg/protocol/builtin" // the protocols
)

// roles are what every replica runs for the protocols (pkg/protocol), each
// with its protocol, and the nodes' lister that names next hops.
type roles struct {
	byProto map[config.Protocol]protocol.Replica
	all     []protocol.Replica // in protocol.All's order
	nodes   corelisters.NodeLister
}

// RunInEveryReplica starts what must run whoever leads: each protocol's
// replica role the config asks for (BGP: the speaker and the announcer
// with the nodes as next hops, or with announceFrom Nodes the announcer
// that tells which nodes' agents announce what; L2: the observer of the
// node agents' membership), and what they ask of the runtime (with
// announceFrom Nodes and routes.enabled, the watch on the node agents' pods
// that tells which pod routes they announce). Without a role it announces nothing. It returns once they are
// started. The roles run until ctx ends; what must outlive ctx (BGP
// sessions that routers keep) ends in StopInEveryReplica.
func (c *Cloud) RunInEveryReplica(ctx context.Context, cs kubernetes.Interface, factory informers.SharedInformerFactory) error {
	cfg := c.state.Load().cfg
	rs := &roles{byProto: map[config.Protocol]protocol.Replica{}, nodes: factory.Core().V1().Nodes().Lister()}
	for _, p := range protocol.All() {
		env := protocol.ReplicaEnv{
			Informers: announcer.Informers{
				Services:       factory.Core().V1().Services().Informer(),
				Nodes:          factory.Core().V1().Nodes().Informer(),
				EndpointSlices: factory.Discovery().V1().EndpointSlices().Informer(),
			},
			Nodes:        rs.nodes,
			Services:     factory.Core().V1().Services().Lister(),
			Wants:        c.wantsLoadBalancer,
			Addresses:    c.announcesNow(p.Name()),
			InPools:      func(addr netip.Addr) bool { return c.state.Load().cfg.LoadBalancer.InPools(addr) },
			HealthChecks: func() *announcer.HealthChecks { return c.healthChecks(cfg.HealthChecks, newPodEvents(ctx, cs)) },
			PodRoutes:    c.announcer.Store,
			PodRoutesFromAgents: func() {
				c.agentRoutes.Store(newAgentRoutes(ctx, cs, agentNamespace(), cfg.Routes.NextHopAddressType))
			},
		}
		r, err := p.Replica(cfg, env)
		if err != nil {
			return err
		}
		if r == nil {
			continue
		}
		if err := r.Start(ctx); err != nil {
			return fmt.Errorf("start %s: %w", p.Name(), err)
		}
		rs.byProto[p.Name()] = r
		rs.all = append(rs.all, r)
	}
	if len(rs.all) == 0 {
		return nil
	}
	c.roles.Store(rs)
	factory.Start(ctx.Done())
	for _, r := range rs.all {
		go r.Run(ctx)
	}
	return nil
}

// announcesNow is config.LoadBalancer.Announcer over the config of the
// moment: a replica's announcements follow a reload's pools where its
// protocol reads them live (BGP: allocation does at once, and the reload
// resyncs the roles), where the node agents' follow their start's.
func (c *Cloud) announcesNow(proto config.Protocol) func(netip.Addr) bool {
	return func(addr netip.Addr) bool { return c.state.Load().cfg.LoadBalancer.Announces(addr, proto) }
}

// StopInEveryReplica stops the roles of a replica that is about to exit,
// each as the config in force says (BGP: bgp.onStop); othersRun tells
// whether another replica is known to run, and is asked only by a role
// that needs to know, as it may wait for another replica to take the
// Lease over.
func (c *Cloud) StopInEveryReplica(ctx context.Context, othersRun func() bool) {
	rs := c.roles.Load()
	if rs == nil {
		return
	}
	cfg := c.state.Load().cfg
	for _, r := range rs.all {
		r.Stop(ctx, cfg, othersRun)
	}
}
