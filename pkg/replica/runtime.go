// Package replica is the runtime every replica of the manager runs, whoever
// leads: each announcement protocol's replica role (pkg/protocol), the
// node health checks of the announcer with the nodes as next hops, and the
// watch on the node agents' pods for their pod routes. The provider
// (pkg/metal) builds it, hands it to the manager as its every-replica work
// and asks it what the Services' status and the Routes interface show.
package replica

import (
	"context"
	"fmt"
	"net/netip"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/metal-ccm/metal-ccm/pkg/announcer"
	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/protocol"
	_ "github.com/metal-ccm/metal-ccm/pkg/protocol/builtin" // the protocols
	"github.com/metal-ccm/metal-ccm/pkg/svcstatus"
)

// eventComponent is the source component of the Events a replica records.
const eventComponent = "metal-cloud-controller-manager"

// Runtime is a replica's runtime. Its methods are safe for concurrent use.
type Runtime struct {
	// Config is the config in force (a reload swaps it).
	Config func() *config.CloudConfig
	// Wants is whether the replica serves a Service (its class).
	Wants func(*v1.Service) bool
	// Event records an Event while the leader's recorder runs.
	Event func(obj runtime.Object, eventType, reason, format string, args ...any)

	roles atomic.Pointer[roles]
	// announcer: the announcer with the nodes as next hops, which a
	// protocol hands over (ReplicaEnv.PodRoutes): the Routes interface
	// reads its pod routes and /metrics its health checks.
	announcer atomic.Pointer[announcer.Announcer]
	// agentRoutes: with announceFrom Nodes and routes.enabled, the pod
	// routes the node agents announce.
	agentRoutes atomic.Pointer[agentRoutes]
}

// roles are what the replica runs for the protocols, each with its
// protocol, and the nodes' lister that names next hops.
type roles struct {
	byProto map[config.Protocol]protocol.Replica
	all     []protocol.Replica // in protocol.All's order
	nodes   corelisters.NodeLister
}

// RunInEveryReplica starts each protocol's replica role the config asks
// for (BGP: the speaker and the announcer with the nodes as next hops, or
// with announceFrom Nodes the announcer that tells which nodes' agents
// announce what; L2: the observer of the node agents' membership), and what
// they ask of the runtime (with announceFrom Nodes and routes.enabled, the
// watch on the node agents' pods that tells which pod routes they
// announce). Without a role it announces nothing. It returns once they are
// started. The roles run until ctx ends; what must outlive ctx (BGP
// sessions that routers keep) ends in StopInEveryReplica.
func (r *Runtime) RunInEveryReplica(ctx context.Context, cs kubernetes.Interface, factory informers.SharedInformerFactory) error {
	cfg := r.Config()
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
			Wants:        r.Wants,
			Addresses:    r.announcesNow(p.Name()),
			InPools:      func(addr netip.Addr) bool { return r.Config().LoadBalancer.InPools(addr) },
			HealthChecks: func() *announcer.HealthChecks { return r.healthChecks(ctx, cfg.HealthChecks, newPodEvents(ctx, cs)) },
			PodRoutes:    r.announcer.Store,
			PodRoutesFromAgents: func() {
				r.agentRoutes.Store(newAgentRoutes(ctx, cs, agentNamespace(), cfg.Routes.NextHopAddressType))
			},
		}
		role, err := p.Replica(cfg, env)
		if err != nil {
			return err
		}
		if role == nil {
			continue
		}
		if err := role.Start(ctx); err != nil {
			return fmt.Errorf("start %s: %w", p.Name(), err)
		}
		rs.byProto[p.Name()] = role
		rs.all = append(rs.all, role)
	}
	if len(rs.all) == 0 {
		return nil
	}
	r.roles.Store(rs)
	factory.Start(ctx.Done())
	for _, role := range rs.all {
		go role.Run(ctx)
	}
	publishSessions(ctx, cs, rs.all)
	return nil
}

// announcesNow is config.LoadBalancer.Announcer over the config of the
// moment: a replica's announcements follow a reload's pools where its
// protocol reads them live (BGP: allocation does at once, and the reload
// resyncs the roles), where the node agents' follow their start's.
func (r *Runtime) announcesNow(proto config.Protocol) func(netip.Addr) bool {
	return func(addr netip.Addr) bool { return r.Config().LoadBalancer.Announces(addr, proto) }
}

// StopInEveryReplica stops the roles of a replica that is about to exit,
// each as the config in force says (BGP: bgp.onStop); othersRun tells
// whether another replica is known to run, and is asked only by a role
// that needs to know, as it may wait for another replica to take the
// Lease over.
func (r *Runtime) StopInEveryReplica(ctx context.Context, othersRun func() bool) {
	rs := r.roles.Load()
	if rs == nil {
		return
	}
	cfg := r.Config()
	for _, role := range rs.all {
		role.Stop(ctx, cfg, othersRun)
	}
}

// Lead runs, on the leader, what each role writes (until ctx ends).
func (r *Runtime) Lead(ctx context.Context, patch func(ctx context.Context, svc *v1.Service, key, value string) error) {
	rs := r.roles.Load()
	if rs == nil {
		return
	}
	env := protocol.LeaderEnv{PatchAnnotation: patch, Event: r.Event, Config: r.Config}
	for _, role := range rs.all {
		go role.Lead(ctx, env)
	}
}

// Resync makes the roles that read the pools live look at every Service
// again (a reload changed the pools).
func (r *Runtime) Resync() {
	if rs := r.roles.Load(); rs != nil {
		for _, role := range rs.all {
			role.Resync()
		}
	}
}

// Running reports whether some role runs.
func (r *Runtime) Running() bool { return r.roles.Load() != nil }

// WatchChanges calls kick whenever a role's announcements may have changed,
// until ctx ends.
func (r *Runtime) WatchChanges(ctx context.Context, kick func()) {
	rs := r.roles.Load()
	if rs == nil {
		return
	}
	for _, role := range rs.all {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-role.Changed():
					kick()
				}
			}
		}()
	}
}

// NodeNames names the nodes by their InternalIPs, for the next hops the
// roles report.
func (r *Runtime) NodeNames() map[netip.Addr]string {
	out := map[netip.Addr]string{}
	rs := r.roles.Load()
	if rs == nil {
		return out
	}
	list, err := rs.nodes.List(labels.Everything())
	if err != nil {
		return out
	}
	for _, n := range list {
		for _, addr := range n.Status.Addresses {
			if ip, err := netip.ParseAddr(addr.Address); err == nil && addr.Type == v1.NodeInternalIP {
				out[ip.Unmap()] = n.Name
			}
		}
	}
	return out
}

// Announcement is what the replica knows of addr's announcement with
// proto, nodes naming the next hops; ok is false while it does not know.
func (r *Runtime) Announcement(p protocol.Protocol, addr netip.Addr, nodes map[netip.Addr]string) (svcstatus.Announcement, bool) {
	if rs := r.roles.Load(); rs != nil {
		if role := rs.byProto[p.Name()]; role != nil {
			return role.Announcement(addr, nodes)
		}
	}
	return p.Unknown(addr)
}

// OutputAnnotations are the annotations the roles' leader writes on
// Services, for people to read.
func OutputAnnotations() []string {
	var out []string
	for _, p := range protocol.All() {
		out = append(out, p.OutputAnnotations()...)
	}
	return out
}

// RouteSource is where the pod routes in place are read: the replicas'
// own announcer (announceFrom Replicas), or the node agents' pods
// (announceFrom Nodes); nil before RunInEveryReplica has started one.
func (r *Runtime) RouteSource() RouteSource {
	if ar := r.agentRoutes.Load(); ar != nil {
		return ar
	}
	if a := r.announcer.Load(); a != nil {
		return a
	}
	return nil
}

// RouteSource tells which pod routes are in place and the next hop a
// node's pod CIDR gets.
type RouteSource interface {
	NodeRoutes() []announcer.NodeRoute
	NextHopFor(node string, v4 bool) (netip.Addr, bool)
}
