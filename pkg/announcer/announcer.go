// Package announcer decides which next hops each LoadBalancer address is
// announced with, from what the API server shows: the Services' status, the
// nodes, and the EndpointSlices of Services with externalTrafficPolicy Local.
// It runs in every replica, leader or not, so that losing the leader loses no
// route.
package announcer

import (
	"cmp"
	"context"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/nodes"
)

// PathSetter announces a prefix with exactly the given next hops; none withdraws it.
type PathSetter interface {
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
}

// Announcer keeps the speaker's paths equal to what the cluster shows.
type Announcer struct {
	speaker  PathSetter
	serves   Filter
	opts     Options
	services corelisters.ServiceLister
	nodes    corelisters.NodeLister
	slices   cache.Indexer // EndpointSlices, indexed by Service (byService)
	synced   []cache.InformerSynced

	mu         sync.Mutex
	dirtySvcs  map[string]bool
	nodesDirty bool
	wake       chan struct{}

	// Owned by the run loop.
	contrib   map[string]map[netip.Prefix][]netip.Addr // service -> its prefixes and next hops
	owners    map[netip.Prefix]map[string]bool         // prefix -> services announcing it
	applied   map[netip.Prefix][]netip.Addr            // what the speaker has
	eligible  map[string]nodeHops                      // node name -> next hops
	hops4     []netip.Addr                             // the eligible nodes' IPv4 next hops, sorted; never modified
	hops6     []netip.Addr                             // the same for IPv6
	retryNext map[netip.Prefix]bool                    // prefixes whose SetPaths failed

	podApplied map[string]map[netip.Prefix]netip.Addr // node -> its announced pod routes (under mu)
}

type nodeHops struct{ v4, v6 netip.Addr }

// New builds an announcer over factory's informers. Start the factory after.
func New(factory informers.SharedInformerFactory, speaker PathSetter, serves Filter, opts Options) *Announcer {
	if opts.PodNextHop == "" {
		opts.PodNextHop = v1.NodeInternalIP
	}
	if opts.MaxNextHops <= 0 || opts.MaxNextHops > MaxNextHops {
		opts.MaxNextHops = MaxNextHops
	}
	a := &Announcer{
		speaker:   speaker,
		serves:    serves,
		opts:      opts,
		services:  factory.Core().V1().Services().Lister(),
		nodes:     factory.Core().V1().Nodes().Lister(),
		dirtySvcs: map[string]bool{},
		wake:      make(chan struct{}, 1),
		contrib:   map[string]map[netip.Prefix][]netip.Addr{},
		owners:    map[netip.Prefix]map[string]bool{},
		applied:   map[netip.Prefix][]netip.Addr{},
		retryNext: map[netip.Prefix]bool{},
	}
	svcInf := factory.Core().V1().Services().Informer()
	nodeInf := factory.Core().V1().Nodes().Informer()
	sliceInf := factory.Discovery().V1().EndpointSlices().Informer()
	if err := sliceInf.AddIndexers(cache.Indexers{byService: serviceOfSlice}); err != nil {
		// Only if the factory was started before New, which New forbids.
		klog.Background().Error(err, "EndpointSlices not indexed: Local Services will not be announced")
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
	a.dirtySvcs[svc.Namespace+"/"+svc.Name] = true
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
	a.dirtySvcs[s.Namespace+"/"+name] = true
	a.mu.Unlock()
	a.kick()
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
	}
}

// sync applies every pending change and reports whether some must be retried.
func (a *Announcer) sync(ctx context.Context) bool {
	a.mu.Lock()
	dirty, nodesDirty := a.dirtySvcs, a.nodesDirty
	a.dirtySvcs, a.nodesDirty = map[string]bool{}, false
	a.mu.Unlock()

	if nodesDirty || a.eligible == nil {
		a.eligible = a.eligibleNodes()
		a.hops4, a.hops6 = hopLists(a.eligible)
		if a.opts.PodRoutes {
			a.nodeRoutesDirty(dirty)
		}
		for key := range a.contrib {
			dirty[key] = true
		}
		if nodesDirty {
			// Services not yet announced may become announceable.
			if all, err := a.services.List(labels.Everything()); err == nil {
				for _, s := range all {
					dirty[s.Namespace+"/"+s.Name] = true
				}
			}
		}
	}
	prefixes := map[netip.Prefix]bool{}
	for p := range a.retryNext {
		prefixes[p] = true
	}
	for key := range dirty {
		for p := range a.contrib[key] {
			prefixes[p] = true
		}
		next := a.contribution(key)
		for p := range a.contrib[key] {
			if _, still := next[p]; !still {
				delete(a.owners[p], key)
			}
		}
		if len(next) == 0 {
			delete(a.contrib, key)
		} else {
			a.contrib[key] = next
		}
		for p := range next {
			prefixes[p] = true
			if a.owners[p] == nil {
				a.owners[p] = map[string]bool{}
			}
			a.owners[p][key] = true
		}
	}
	a.retryNext = map[netip.Prefix]bool{}
	for p := range prefixes {
		want := a.wanted(p)
		if len(a.owners[p]) == 0 {
			delete(a.owners, p)
		}
		if slices.Equal(want, a.applied[p]) {
			continue
		}
		if err := a.speaker.SetPaths(ctx, p, want); err != nil {
			klog.FromContext(ctx).Error(err, "Cannot announce; retrying", "prefix", p)
			a.retryNext[p] = true
			continue
		}
		a.mu.Lock()
		if len(want) == 0 {
			delete(a.applied, p)
		} else {
			a.applied[p] = want
		}
		a.mu.Unlock()
	}
	if a.opts.PodRoutes {
		a.recordPodRoutes()
	}
	return len(a.retryNext) > 0
}

// wanted is the union of the next hops the owners of p contribute, sorted.
// With one owner (the common case) it is that owner's list itself: the
// lists are never modified once made.
func (a *Announcer) wanted(p netip.Prefix) []netip.Addr {
	owners := a.owners[p]
	if len(owners) == 1 {
		for key := range owners {
			return a.contrib[key][p]
		}
	}
	var want []netip.Addr
	for key := range owners {
		want = append(want, a.contrib[key][p]...)
	}
	slices.SortFunc(want, netip.Addr.Compare)
	return slices.Compact(want)
}

// recordPodRoutes notes which nodes' pod routes the speaker has, for NodeRoutes.
func (a *Announcer) recordPodRoutes() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.podApplied = map[string]map[netip.Prefix]netip.Addr{}
	for key, c := range a.contrib {
		name, ok := strings.CutPrefix(key, nodeKeyPrefix)
		if !ok {
			continue
		}
		for p, hops := range c {
			if len(hops) == 1 && slices.Contains(a.applied[p], hops[0]) {
				if a.podApplied[name] == nil {
					a.podApplied[name] = map[netip.Prefix]netip.Addr{}
				}
				a.podApplied[name][p] = hops[0]
			}
		}
	}
}

// contribution computes the prefixes and next hops of a Service, or of a
// node's pod CIDRs (key "node:NAME").
func (a *Announcer) contribution(key string) map[netip.Prefix][]netip.Addr {
	if name, ok := strings.CutPrefix(key, nodeKeyPrefix); ok {
		return a.podRoutes(name)
	}
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	svc, err := a.services.Services(ns).Get(name)
	if err != nil || svc.DeletionTimestamp != nil || !a.serves(svc) {
		return nil
	}
	hops4, hops6 := a.hops4, a.hops6
	if svc.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal {
		hops4, hops6 = hopLists(a.withReadyEndpoints(svc))
	}
	out := map[netip.Prefix][]netip.Addr{}
	for _, in := range svc.Status.LoadBalancer.Ingress {
		ip, err := netip.ParseAddr(in.IP)
		if err != nil {
			continue
		}
		ip = ip.Unmap()
		hops := hops6
		if ip.Is4() {
			hops = hops4
		}
		p := netip.PrefixFrom(ip, ip.BitLen())
		out[p] = capNextHops(p, hops, a.opts.MaxNextHops)
	}
	return out
}

// hopLists returns the nodes' IPv4 and IPv6 next hops, each sorted.
func hopLists(nodes map[string]nodeHops) (v4, v6 []netip.Addr) {
	for _, n := range nodes {
		if n.v4.IsValid() {
			v4 = append(v4, n.v4)
		}
		if n.v6.IsValid() {
			v6 = append(v6, n.v6)
		}
	}
	slices.SortFunc(v4, netip.Addr.Compare)
	slices.SortFunc(v6, netip.Addr.Compare)
	return slices.Compact(v4), slices.Compact(v6)
}

// MaxNextHops is the most next hops one address can be announced with: the
// speaker's ADD-PATH limit.
const MaxNextHops = 255

// capNextHops keeps at most limit of the sorted hops, chosen by rendezvous
// hashing of the prefix and each hop: every prefix gets a stable choice, the
// prefixes spread over all nodes, and a node that comes or goes moves at most
// one path of each prefix. The result is sorted; a list within the limit is
// returned as it is.
func capNextHops(p netip.Prefix, hops []netip.Addr, limit int) []netip.Addr {
	if len(hops) <= limit {
		return hops
	}
	type scored struct {
		score uint64
		hop   netip.Addr
	}
	seed := fnv64(fnvOffset, p.Addr().As16()) // host prefixes: the address tells them apart
	all := make([]scored, len(hops))
	for i, h := range hops {
		all[i] = scored{mix64(fnv64(seed, h.As16())), h}
	}
	slices.SortFunc(all, func(a, b scored) int {
		if a.score != b.score {
			return cmp.Compare(a.score, b.score)
		}
		return a.hop.Compare(b.hop)
	})
	out := make([]netip.Addr, limit)
	for i := range out {
		out[i] = all[i].hop
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return out
}

// FNV-1a, 64 bits, over 16-byte blocks without allocating.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// mix64 is the finalizer of SplitMix64. FNV-1a alone barely mixes its last
// byte into the high bits, so hops that differ only there (the nodes of one
// subnet) would score in nearly their own order and one subnet's nodes would
// be chosen together.
func mix64(z uint64) uint64 {
	z ^= z >> 30
	z *= 0xbf58476d1ce4e5b9
	z ^= z >> 27
	z *= 0x94d049bb133111eb
	return z ^ z>>31
}

func fnv64(h uint64, b [16]byte) uint64 {
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime
	}
	return h
}

// byService indexes EndpointSlices by "namespace/service".
const byService = "metal-ccm.io/service"

func serviceOfSlice(o any) ([]string, error) {
	s, ok := o.(*discoveryv1.EndpointSlice)
	if !ok || s.Labels[discoveryv1.LabelServiceName] == "" {
		return nil, nil
	}
	return []string{s.Namespace + "/" + s.Labels[discoveryv1.LabelServiceName]}, nil
}

// slicesOf returns the EndpointSlices of a Service.
func (a *Announcer) slicesOf(svc *v1.Service) []*discoveryv1.EndpointSlice {
	objs, err := a.slices.ByIndex(byService, svc.Namespace+"/"+svc.Name)
	if err != nil {
		return nil
	}
	out := make([]*discoveryv1.EndpointSlice, 0, len(objs))
	for _, o := range objs {
		if s, ok := o.(*discoveryv1.EndpointSlice); ok {
			out = append(out, s)
		}
	}
	return out
}

// withReadyEndpoints narrows the eligible nodes to those with a ready
// endpoint of svc (externalTrafficPolicy Local): an endpoint on a node that
// does not carry traffic adds nothing.
func (a *Announcer) withReadyEndpoints(svc *v1.Service) map[string]nodeHops {
	out := map[string]nodeHops{}
	for _, s := range a.slicesOf(svc) {
		for _, ep := range s.Endpoints {
			ready := ep.Conditions.Ready == nil || *ep.Conditions.Ready
			if !ready || ep.NodeName == nil {
				continue
			}
			if h, ok := a.eligible[*ep.NodeName]; ok {
				out[*ep.NodeName] = h
			}
		}
	}
	return out
}

// ExcludeLabel keeps a node out of every announcement unless its value
// parses as false, as upstream reads it (nodes.Included).
const ExcludeLabel = nodes.ExcludeLabel

func (a *Announcer) eligibleNodes() map[string]nodeHops {
	list, err := a.nodes.List(labels.Everything())
	if err != nil {
		return map[string]nodeHops{}
	}
	out := map[string]nodeHops{}
	for _, n := range list {
		if h := hopsOf(n); h.v4.IsValid() || h.v6.IsValid() {
			out[n.Name] = h
		}
	}
	return out
}

// hopsOf returns the next hops a node offers, its first InternalIP of each
// family: none unless it carries load-balancer traffic (Ready, initialized,
// not being deleted, not excluded, not about to be deleted by the cluster
// autoscaler; see nodes.CarriesLoadBalancerTraffic).
func hopsOf(n *v1.Node) nodeHops {
	if !nodes.CarriesLoadBalancerTraffic(n) {
		return nodeHops{}
	}
	var h nodeHops
	for _, addr := range n.Status.Addresses {
		if addr.Type != v1.NodeInternalIP {
			continue
		}
		ip, err := netip.ParseAddr(addr.Address)
		if err != nil {
			continue
		}
		ip = ip.Unmap()
		if ip.Is4() && !h.v4.IsValid() {
			h.v4 = ip
		} else if ip.Is6() && !h.v6.IsValid() {
			h.v6 = ip
		}
	}
	return h
}
