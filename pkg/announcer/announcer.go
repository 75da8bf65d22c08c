// Package announcer decides which next hops each LoadBalancer address is
// announced with, from what the API server shows: the Services' status, the
// nodes, and the EndpointSlices of Services with externalTrafficPolicy Local.
// It runs in every replica, leader or not, so that losing the leader loses no
// route.
package announcer

import (
	"context"
	"net/netip"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/community"
)

// Backend puts what the announcer decides on the network: one announcement
// protocol (the BGP speaker of pkg/bgp today; L2 next). SetPaths makes
// nextHops the full set of nodes the traffic of prefix goes to; none
// withdraws it. A backend may keep nextHops: the announcer never modifies a
// list once made.
type Backend interface {
	SetPaths(ctx context.Context, prefix netip.Prefix, nextHops []netip.Addr) error
}

// Filter says whether the announcer serves a Service (type LoadBalancer, the
// provider's class).
type Filter func(*v1.Service) bool

// Options of an announcer.
type Options struct {
	// PodRoutes announces each node's spec.podCIDRs with the node as next hop.
	PodRoutes bool
	// PodNextHop is the node address type used as pod routes' next hop;
	// default InternalIP.
	PodNextHop v1.NodeAddressType
	// MaxNextHops is the most next hops one LoadBalancer address is
	// announced with; 0 (or more than MaxNextHops) means MaxNextHops.
	MaxNextHops int
	// HealthChecks, when set, leaves out of each address the nodes that
	// fail their health checks (fail open: all of them when none passes).
	HealthChecks *HealthChecks
	// OnlyNode, when set, makes the announcer a node agent's: it announces
	// the addresses this node carries, with this node as the only next hop,
	// and this node's pod routes. Its health check then fails closed: a
	// node whose own kube-proxy fails withdraws itself (the other nodes'
	// agents still announce theirs).
	OnlyNode string
	// Addresses, when set, says which of a Service's status addresses this
	// announcer announces: those of the pools its protocol serves
	// (config.LoadBalancer.Announcer). The others are left out; those in
	// no pool at all (InPools) are counted (OutsidePools), and the leader
	// warns on their Service. Pod routes are not Service addresses and are
	// not asked. Nil: every address (tests).
	Addresses func(netip.Addr) bool
	// InPools says whether an address is in some pool, of any protocol:
	// one that another protocol announces is not outside the pools. Nil:
	// every address Addresses refuses is counted.
	InPools func(netip.Addr) bool
	// Communities, when set and the backend is a CommunityBackend, are the
	// communities a Service adds to the paths of its address
	// (bgp.ServiceCommunities).
	Communities func(svc *v1.Service, addr netip.Addr) community.Set
	// Weighted, when set and the backend is a WeightBackend, says whether
	// the paths of a Service's address with externalTrafficPolicy Local
	// carry the ready endpoints behind each next hop (weighted ECMP:
	// loadBalancer.pools[].weightedECMP).
	Weighted func(svc *v1.Service, addr netip.Addr) bool
}

// Announcer keeps the speaker's paths equal to what the cluster shows.
type Announcer struct {
	backend  Backend
	serves   Filter
	opts     Options
	services corelisters.ServiceLister
	nodes    corelisters.NodeLister
	slices   cache.Indexer // EndpointSlices, indexed by Service (byService)
	synced   []cache.InformerSynced

	mu            sync.Mutex
	dirtySvcs     map[string]bool
	nodesDirty    bool
	healthChanges []netip.AddrPort // targets whose state changed
	wake          chan struct{}

	// Owned by the run loop: the paths of both reconcilers (LoadBalancer
	// addresses, pod routes), and the eligible nodes.
	table    *pathTable
	comms    *prefixValues[community.Set] // nil: the Services' communities are not announced
	weights  *prefixValues[hopWeights]    // nil: no weighted ECMP
	eligible map[string]nodeHops          // node name -> next hops
	hops4    []netip.Addr                 // the eligible, healthy nodes' IPv4 next hops, sorted; never modified
	hops6    []netip.Addr                 // the same for IPv6

	// health checks the nodes (nil: no checks); healthTargetsChanged: a
	// Local Service's checked nodes changed in this sync.
	health               *health
	healthTargetsChanged bool

	outside outsidePools // the Services' addresses left out (Options.Addresses)

	podApplied map[string]map[netip.Prefix]netip.Addr // node -> its announced pod routes (under mu)
	firstSync  chan struct{}                          // closed once the first sync after the caches' is done
}

// Informers are what an announcer watches, all of a cluster's objects of
// each kind. They are informers, not a shared informer factory, so that a
// caller that needs only these three (the node agent) need not link
// client-go's factory, which links every API group's informers and clients.
type Informers struct {
	Services, Nodes, EndpointSlices cache.SharedIndexInformer
}

// New builds an announcer over inf. Start the informers after.
func New(inf Informers, backend Backend, serves Filter, opts Options) *Announcer {
	if opts.PodNextHop == "" {
		opts.PodNextHop = v1.NodeInternalIP
	}
	if opts.MaxNextHops <= 0 || opts.MaxNextHops > MaxNextHops {
		opts.MaxNextHops = MaxNextHops
	}
	a := &Announcer{
		backend:   backend,
		serves:    serves,
		opts:      opts,
		services:  corelisters.NewServiceLister(inf.Services.GetIndexer()),
		nodes:     corelisters.NewNodeLister(inf.Nodes.GetIndexer()),
		dirtySvcs: map[string]bool{},
		wake:      make(chan struct{}, 1),
		firstSync: make(chan struct{}),
		table:     newPathTable(),
	}
	if cb, ok := backend.(CommunityBackend); ok && opts.Communities != nil {
		a.comms = newCommunityTable(cb)
	}
	if wb, ok := backend.(WeightBackend); ok && opts.Weighted != nil {
		a.weights = newWeightTable(wb)
	}
	if opts.HealthChecks != nil {
		a.health = newHealth(*opts.HealthChecks, a.healthChanged)
		a.health.failClosed = opts.OnlyNode != ""
	}
	svcInf, nodeInf, sliceInf := inf.Services, inf.Nodes, inf.EndpointSlices
	// Two announcers may share the informers (a node agent's BGP and L2
	// announcers): the index is added once.
	if _, ok := sliceInf.GetIndexer().GetIndexers()[byService]; !ok {
		if err := sliceInf.AddIndexers(cache.Indexers{byService: serviceOfSlice}); err != nil {
			// Only if the informer was started before New, which New forbids.
			klog.Background().Error(err, "EndpointSlices not indexed: Local Services will not be announced")
		}
	}
	a.slices = sliceInf.GetIndexer()
	svcHandler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { a.serviceChanged(o) },
		UpdateFunc: func(_, o any) { a.serviceChanged(o) },
		DeleteFunc: func(o any) { a.serviceChanged(o) },
	}
	nodeHandler := cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { a.nodesChanged() },
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*v1.Node)
			c, ok2 := cur.(*v1.Node)
			// hopsOf is empty for a node that does not carry traffic, so a
			// change of eligibility (condition, label, taint, deletion) or of
			// address changes it; heartbeats and the rest change nothing.
			if !ok1 || !ok2 || hopsOf(o) != hopsOf(c) || (a.opts.PodRoutes && !podRoutesEqual(o, c)) {
				a.nodesChanged()
			}
		},
		DeleteFunc: func(any) { a.nodesChanged() },
	}
	sliceHandler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { a.sliceChanged(o) },
		UpdateFunc: func(_, o any) { a.sliceChanged(o) },
		DeleteFunc: func(o any) { a.sliceChanged(o) },
	}
	for _, reg := range []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{{svcInf, svcHandler}, {nodeInf, nodeHandler}, {sliceInf, sliceHandler}} {
		r, err := reg.inf.AddEventHandler(reg.h)
		if err != nil {
			klog.Background().Error(err, "Cannot watch for the announcer")
			continue
		}
		a.synced = append(a.synced, r.HasSynced)
	}
	return a
}

func (a *Announcer) kick() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

func (a *Announcer) serviceChanged(o any) {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	svc, ok := o.(*v1.Service)
	if !ok {
		return
	}
	a.mu.Lock()
	a.dirtySvcs[cache.MetaObjectToName(svc).String()] = true
	a.mu.Unlock()
	a.kick()
}

func (a *Announcer) sliceChanged(o any) {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	s, ok := o.(*discoveryv1.EndpointSlice)
	if !ok {
		return
	}
	name := s.Labels[discoveryv1.LabelServiceName]
	if name == "" {
		return
	}
	a.mu.Lock()
	a.dirtySvcs[cache.NewObjectName(s.Namespace, name).String()] = true
	a.mu.Unlock()
	a.kick()
}

// healthChanged is the checker's notification: a target's state changed.
func (a *Announcer) healthChanged(t netip.AddrPort) {
	a.mu.Lock()
	a.healthChanges = append(a.healthChanges, t)
	a.mu.Unlock()
	a.kick()
}

// primeHealth starts the checks of every target before the first
// announcement and waits for their first results (waitFirstRound).
func (a *Announcer) primeHealth(ctx context.Context) {
	eligible := a.eligibleNodes()
	a.eligible = eligible // withReadyEndpoints reads it
	if all, err := a.services.List(labels.Everything()); err == nil {
		for _, svc := range all {
			if a.serves(svc) && svc.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal {
				a.health.setLocal(cache.MetaObjectToName(svc).String(), a.withReadyEndpoints(svc), localPort(svc))
			}
		}
	}
	a.eligible = nil // the first sync computes it anew
	a.health.apply(eligible)
	a.health.waitFirstRound(ctx)
}

func (a *Announcer) nodesChanged() {
	a.mu.Lock()
	a.nodesDirty = true
	a.mu.Unlock()
	a.kick()
}

// Run applies changes until ctx ends. Nothing is announced before every
// informer has synced, so a restart never withdraws what it has not seen.
func (a *Announcer) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName("announcer")
	ctx = klog.NewContext(ctx, logger)
	if !cache.WaitForCacheSync(ctx.Done(), a.synced...) {
		return
	}
	if a.health != nil {
		go a.health.checker.Run(ctx)
		a.primeHealth(ctx)
	}
	a.nodesChanged()
	retry := time.NewTimer(time.Hour)
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.wake:
		case <-retry.C:
		}
		if a.sync(ctx) {
			retry.Reset(time.Second)
		}
		select {
		case <-a.firstSync:
		default:
			close(a.firstSync)
		}
	}
}

// sync applies every pending change and reports whether some must be
// retried. The two reconcilers (LoadBalancer addresses, pod routes) each put
// their owners' paths in the table, which sends the backend what changed.
func (a *Announcer) sync(ctx context.Context) bool {
	a.mu.Lock()
	dirty, nodesDirty, changes := a.dirtySvcs, a.nodesDirty, a.healthChanges
	a.dirtySvcs, a.nodesDirty, a.healthChanges = map[string]bool{}, false, nil
	a.mu.Unlock()

	touched := map[netip.Prefix]bool{}
	if len(changes) > 0 {
		a.health.events(ctx, changes)
	}
	a.healthTargetsChanged = false
	refresh := nodesDirty || a.eligible == nil
	if refresh || len(changes) > 0 {
		if refresh {
			a.eligible = a.eligibleNodes()
			a.healthTargetsChanged = true
		}
		a.hops4, a.hops6 = hopLists(a.health.healthy(a.eligible, a.health.proxyPort()))
		a.health.report(ctx, a.eligible)
		for _, key := range a.table.keys(fromService) {
			dirty[key] = true
		}
		if nodesDirty {
			// Services not yet announced may become announceable.
			if all, err := a.services.List(labels.Everything()); err == nil {
				for _, s := range all {
					dirty[cache.MetaObjectToName(s).String()] = true
				}
			}
		}
		if a.opts.PodRoutes && refresh {
			a.syncPodRoutes(touched)
		}
	}
	commsTouched, weightsTouched := map[netip.Prefix]bool{}, map[netip.Prefix]bool{}
	for key := range dirty {
		paths, comms, weights := a.serviceContribution(key)
		a.table.set(owner{fromService, key}, paths, touched)
		if a.comms != nil {
			a.comms.set(key, comms, commsTouched)
		}
		if a.weights != nil {
			a.weights.set(key, weights, weightsTouched)
		}
	}
	if a.healthTargetsChanged {
		a.health.apply(a.eligible)
	}
	retry := false
	if a.comms != nil {
		retry = a.comms.apply(ctx, commsTouched)
	}
	if a.weights != nil {
		retry = a.weights.apply(ctx, weightsTouched) || retry
	}
	retry = a.table.apply(ctx, a.backend, touched) || retry
	if a.opts.PodRoutes {
		a.recordPodRoutes()
	}
	return retry
}
