package metal

import (
	"context"
	"fmt"
	"net/netip"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/metal-ccm/metal-ccm/pkg/announcer"
	"github.com/metal-ccm/metal-ccm/pkg/bgp"
	"github.com/metal-ccm/metal-ccm/pkg/config"
)

// RunInEveryReplica starts what must run whoever leads: the announcement
// backends the config asks for (BGP with peers) and the announcer, which
// announces what the Services' status shows; with announceFrom Nodes and
// routes.enabled, the watch on the node agents' pods that tells which pod
// routes they announce; with L2 pools, the observer of the node agents'
// membership that tells which node answers for each L2 address. Without a
// backend it announces nothing. It returns once they are started. The
// announcer stops with ctx;
// the backends do not (BGP sessions must outlive ctx when routers should
// keep the routes): StopInEveryReplica decides what they do.
func (c *Cloud) RunInEveryReplica(ctx context.Context, cs kubernetes.Interface, factory informers.SharedInformerFactory) error {
	cfg := c.state.Load().cfg
	if cfg.Routes.Enabled && cfg.BGP.FromNodes() {
		c.agentRoutes.Store(newAgentRoutes(ctx, cs, agentNamespace(), cfg.Routes.NextHopAddressType))
	}
	built, err := buildBackends(cfg)
	if err != nil {
		return err
	}
	l2 := cfg.LoadBalancer.HasProtocol(config.ProtocolL2)
	fromNodes := cfg.BGP.FromNodes()
	if len(built) == 0 && !l2 && !fromNodes {
		return nil
	}
	inf := announcer.Informers{
		Services:       factory.Core().V1().Services().Informer(),
		Nodes:          factory.Core().V1().Nodes().Informer(),
		EndpointSlices: factory.Discovery().V1().EndpointSlices().Informer(),
	}
	var runs []func(context.Context)
	if len(built) > 0 {
		bs := backends(built)
		for _, b := range bs {
			if err := b.Run(ctx); err != nil {
				return fmt.Errorf("start %s backend: %w", b.Name(), err)
			}
		}
		c.backends.Store(&bs)
		// The replicas announce over BGP only (L2 is the node agents'): the
		// addresses of pools without BGP, and those in no pool, are not
		// theirs to announce.
		rec := announcer.Record(bs)
		ann := announcer.New(inf, rec, c.wantsLoadBalancer, announcer.Options{
			Addresses:    c.announcesNow(config.ProtocolBGP),
			PodRoutes:    cfg.Routes.Enabled,
			PodNextHop:   cfg.Routes.NextHopAddressType,
			MaxNextHops:  cfg.BGP.MaxPathsPerAddress,
			HealthChecks: c.healthChecks(cfg.HealthChecks, newPodEvents(ctx, cs)),
			Communities:  bgp.AnnouncedCommunities(&cfg.LoadBalancer),
		})
		c.announcer.Store(ann)
		c.announced.Store(&announced{paths: rec, synced: ann.Synced, outside: ann.OutsidePools, nodes: factory.Core().V1().Nodes().Lister()})
		runs = append(runs, ann.Run)
	}
	if fromNodes {
		// The node agents announce; this announcer, which sends nothing,
		// only tells which nodes' agents announce what (the Services'
		// status shows it). Each agent checks its own node's health.
		rec := announcer.Record(nil)
		ann := announcer.New(inf, rec, c.wantsLoadBalancer, announcer.Options{MaxNextHops: announcer.MaxNextHops,
			Addresses: c.announcesNow(config.ProtocolBGP)})
		c.announced.Store(&announced{paths: rec, synced: ann.Synced, outside: ann.OutsidePools, nodes: factory.Core().V1().Nodes().Lister(), fromNodes: true})
		runs = append(runs, ann.Run)
	}
	if l2 {
		runs = append(runs, c.observeL2(cfg, inf, factory.Core().V1().Services().Lister(), factory.Core().V1().Nodes().Lister()))
	}
	factory.Start(ctx.Done())
	for _, run := range runs {
		go run(ctx)
	}
	return nil
}

// announcesNow is config.LoadBalancer.Announcer over the config of the
// moment: a replica's BGP announcements follow a reload's pools (allocation
// does at once; the reload resyncs the announcer), where the node agents'
// follow their start's.
func (c *Cloud) announcesNow(proto config.Protocol) func(netip.Addr) bool {
	return func(addr netip.Addr) bool { return c.state.Load().cfg.LoadBalancer.Announces(addr, proto) }
}

// StopInEveryReplica stops the backends of a replica that is about to exit,
// each as its config says (BGP: bgp.onStop); othersRun tells whether
// another replica is known to run, and is asked only by a backend that needs
// to know, as it may wait for another replica to take the Lease over.
func (c *Cloud) StopInEveryReplica(ctx context.Context, othersRun func() bool) {
	bs := c.backends.Load()
	if bs == nil {
		return
	}
	cfg := c.state.Load().cfg
	for _, b := range *bs {
		b.Stop(ctx, cfg, othersRun)
	}
}
