package metal

import (
	"context"
	"encoding/json"
	"maps"
	"net/netip"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/metal-ccm/metal-ccm/pkg/announcer"
	"github.com/metal-ccm/metal-ccm/pkg/bgp"
	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/lbcontroller"
	"github.com/metal-ccm/metal-ccm/pkg/svcstatus"
)

// announced is what a replica knows of the BGP announcements, set by
// RunInEveryReplica: the announcer's paths (with announceFrom Nodes, those
// the node agents announce, computed by an announcer that sends nothing)
// and the nodes, to name the next hops.
type announced struct {
	paths     *announcer.Recorder
	synced    func() bool // the announcer has synced once
	outside   func() int  // the Services' addresses it leaves out: in no BGP pool
	nodes     corelisters.NodeLister
	fromNodes bool
}

// sessionPoll is how often the source looks at the BGP sessions.
const sessionPoll = 2 * time.Second

// statusSource is the svcstatus.Source of the leader: the Services it
// serves, what the allocator refused, what the announcers announce, which
// BGP sessions are up and which node answers for each L2 address.
type statusSource struct {
	c       *Cloud
	changed chan struct{}

	// Set by Services, once per round.
	cfg    *config.CloudConfig
	byAddr map[netip.Addr]string // next hop -> node name
	up     map[string]bool       // established BGP peers, by name
}

func (c *Cloud) newStatusSource() *statusSource {
	return &statusSource{c: c, changed: c.statusKick}
}

func (s *statusSource) Changed() <-chan struct{} { return s.changed }

// kickStatus tells the leader's status writer that a Service's state may
// have changed.
func (c *Cloud) kickStatus() {
	select {
	case c.statusKick <- struct{}{}:
	default:
	}
}

// run forwards the announcers' and the observer's changes, and those of the
// BGP sessions (polled), to the writer until ctx ends.
func (s *statusSource) run(ctx context.Context) {
	var paths, l2 <-chan struct{}
	poll := time.NewTicker(sessionPoll)
	defer poll.Stop()
	var last map[string]bool
	for {
		if a := s.c.announced.Load(); a != nil {
			paths = a.paths.Changed()
		}
		if st := s.c.l2.Load(); st != nil {
			l2 = st.observer.statusChanged
		}
		select {
		case <-ctx.Done():
			return
		case <-paths:
		case <-l2:
		case <-poll.C:
			up := s.c.sessionsUp()
			if maps.Equal(up, last) {
				continue
			}
			last = up
		}
		s.c.kickStatus()
	}
}

// speaker is this replica's BGP speaker, or nil.
func (c *Cloud) speaker() *bgp.Speaker {
	if bs := c.backends.Load(); bs != nil {
		for _, b := range *bs {
			if bb, ok := b.(*bgpBackend); ok {
				return bb.Speaker
			}
		}
	}
	return nil
}

// sessionsUp are the names of the peers whose session is established.
func (c *Cloud) sessionsUp() map[string]bool {
	sp := c.speaker()
	if sp == nil {
		return nil
	}
	up := map[string]bool{}
	for _, p := range sp.PeerStates() {
		if p.Established() {
			up[p.Name] = true
		}
	}
	return up
}

// Services are the Services the leader serves; it also reads, for the
// round, the config, the nodes' next hops and the sessions.
func (s *statusSource) Services() ([]*v1.Service, error) {
	s.cfg = s.c.state.Load().cfg
	s.up = s.c.sessionsUp()
	s.byAddr = map[netip.Addr]string{}
	if a := s.c.announced.Load(); a != nil {
		if nodes, err := a.nodes.List(labels.Everything()); err == nil {
			for _, n := range nodes {
				for _, addr := range n.Status.Addresses {
					if ip, err := netip.ParseAddr(addr.Address); err == nil && addr.Type == v1.NodeInternalIP {
						s.byAddr[ip.Unmap()] = n.Name
					}
				}
			}
		}
	}
	list, err := s.c.lb.services.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(list, func(svc *v1.Service) bool {
		return !s.c.wantsLoadBalancer(svc) || svc.DeletionTimestamp != nil
	}), nil
}

// State is what the leader knows of svc.
func (s *statusSource) State(svc *v1.Service) svcstatus.State {
	var st svcstatus.State
	if r, ok := s.c.refusalOf(lbcontroller.Key(svc)); ok {
		st.RefusalReason, st.RefusalMessage = r.reason, r.message
	}
	lb := &s.cfg.LoadBalancer
	st.Known = true
	for _, addr := range statusIPs(svc) {
		pool := ""
		if p := lb.PoolOf(addr); p != nil {
			pool = p.Name
		}
		st.Addresses = append(st.Addresses, addr)
		st.Pools = append(st.Pools, pool)
		if lb.Announces(addr, config.ProtocolBGP) {
			a, ok := s.bgpAnnouncement(addr)
			st.Known = st.Known && ok
			st.Announcements = append(st.Announcements, a)
		}
		if lb.Announces(addr, config.ProtocolL2) {
			a, ok := s.l2Announcement(addr)
			st.Known = st.Known && ok
			st.Announcements = append(st.Announcements, a)
		}
	}
	return st
}

// bgpAnnouncement is what is known of addr over BGP; ok is false while
// the announcer has not synced.
func (s *statusSource) bgpAnnouncement(addr netip.Addr) (svcstatus.Announcement, bool) {
	a := svcstatus.Announcement{Addr: addr, Protocol: svcstatus.BGP}
	ann := s.c.announced.Load()
	if ann == nil {
		// No BGP peers: nothing announces it over BGP.
		return a, true
	}
	if ann.fromNodes {
		a.Protocol = svcstatus.BGPFromNodes
	}
	if !ann.synced() {
		return a, false
	}
	for _, hop := range ann.paths.NextHops(netip.PrefixFrom(addr, addr.BitLen())) {
		if name, ok := s.byAddr[hop]; ok {
			a.Nodes = append(a.Nodes, name)
		} else {
			a.Nodes = append(a.Nodes, hop.String())
		}
	}
	slices.Sort(a.Nodes)
	if sp := s.c.speaker(); sp != nil {
		a.Peers = sp.SentTo(netip.PrefixFrom(addr, addr.BitLen()))
		for _, p := range a.Peers {
			if s.up[p] {
				a.PeersUp = append(a.PeersUp, p)
			}
		}
	}
	return a, true
}

// l2Announcement is which node answers for addr; ok is false until the
// observer has seen a majority of the agents.
func (s *statusSource) l2Announcement(addr netip.Addr) (svcstatus.Announcement, bool) {
	a := svcstatus.Announcement{Addr: addr, Protocol: svcstatus.L2}
	st := s.c.l2.Load()
	if st == nil {
		return a, false
	}
	node, ok := st.observer.Owner(addr)
	if node != "" {
		a.Nodes = []string{node}
	}
	return a, ok
}

// OutputAnnotations are the annotations the provider writes on Services
// for people to read; the service controller does not sync a Service for
// their changes.
func (c *Cloud) OutputAnnotations() []string {
	return []string{svcstatus.AnnotationSummary, AnnotationL2Nodes}
}

// statusLimits are the writer's limits from the config in force.
func (c *Cloud) statusLimits() svcstatus.Limits {
	s := c.state.Load().cfg.ServiceStatus
	return svcstatus.Limits{MinInterval: s.MinInterval.Duration, WritesPerSecond: s.WritesPerSecond}
}

// runStatusWriter keeps every served Service's conditions and summary
// current until ctx ends. Only the leader runs it.
func (c *Cloud) runStatusWriter(ctx context.Context, client kubernetes.Interface) {
	// The service controller's informer (SetInformers, called after
	// Initialize) feeds it.
	select {
	case <-ctx.Done():
		return
	case <-c.lb.informed:
	}
	if !cache.WaitForCacheSync(ctx.Done(), c.lb.synced) {
		return
	}
	src := c.newStatusSource()
	go src.run(ctx)
	w := svcstatus.NewWriter(src, statusPatcher{client}, c.statusLimits, svcstatus.Hooks{
		Event: func(svc *v1.Service, reason, message string) {
			c.eventf(svc, v1.EventTypeNormal, reason, "%s", message)
		},
		Busy: c.serviceControllerBusy,
		Wrote: func(err error) {
			result := "ok"
			if err != nil {
				result = "error"
			}
			statusWrites.WithLabelValues(result).Inc()
		},
		Counted: func(byReason map[string]int) {
			servicesAnnounced.Reset()
			for reason, n := range byReason {
				if reason == "" {
					reason = "Unknown"
				}
				servicesAnnounced.WithLabelValues(reason).Set(float64(n))
			}
		},
	}, clock.RealClock{})
	w.Run(ctx)
}

// statusPatcher writes a Service's conditions and summary with one merge
// patch of its status subresource (which takes metadata too), at the
// resourceVersion read: a Service changed since is written in a later
// round.
type statusPatcher struct{ client kubernetes.Interface }

func (p statusPatcher) PatchStatus(ctx context.Context, svc *v1.Service, conds []metav1.Condition, summary string) (*v1.Service, error) {
	var ann any = summary
	if summary == "" {
		ann = nil // removes it
	}
	body, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": svc.ResourceVersion, "annotations": map[string]any{svcstatus.AnnotationSummary: ann}},
		"status":   map[string]any{"conditions": conds},
	})
	if err != nil {
		return nil, err
	}
	return p.client.CoreV1().Services(svc.Namespace).Patch(ctx, svc.Name, types.MergePatchType, body, metav1.PatchOptions{}, "status")
}
