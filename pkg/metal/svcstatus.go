package metal

import (
	"context"
	"encoding/json"
	"net/netip"
	"slices"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/metal-ccm/metal-ccm/pkg/annotation"
	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/lbcontroller"
	"github.com/metal-ccm/metal-ccm/pkg/protocol"
	"github.com/metal-ccm/metal-ccm/pkg/replica"
	"github.com/metal-ccm/metal-ccm/pkg/svcstatus"
)

// statusSource is the svcstatus.Source of the leader: the Services it
// serves, what the allocator refused, and what each protocol's role knows
// of their addresses' announcements.
type statusSource struct {
	c       *Cloud
	changed chan struct{}

	// Set by Services, once per round.
	cfg      *config.CloudConfig
	byAddr   map[netip.Addr]string // next hop -> node name
	nodes    []*v1.Node            // for why no node is eligible
	nodesWhy map[svcstatus.Protocol]string
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

// run forwards the roles' changes to the writer until ctx ends.
func (s *statusSource) run(ctx context.Context) { s.c.replica.WatchChanges(ctx, s.c.kickStatus) }

// Services are the Services the leader serves; it also reads, for the
// round, the config and the nodes' next hops.
func (s *statusSource) Services() ([]*v1.Service, error) {
	s.cfg = s.c.state.Load().cfg
	s.byAddr = s.c.replica.NodeNames()
	s.nodes, s.nodesWhy = nil, map[svcstatus.Protocol]string{}
	if s.c.nodes != nil {
		// Without the list, a condition says no eligible node, not why.
		s.nodes, _ = s.c.nodes.List(labels.Everything())
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
		for _, p := range protocol.All() {
			if !lb.Announces(addr, p.Name()) {
				continue
			}
			a, ok := s.c.replica.Announcement(p, addr, s.byAddr)
			st.Known = st.Known && ok
			if st.NoNodeWhy == "" && s.nodes != nil && a.Reason() == svcstatus.ReasonNoEligibleNode {
				why, ok := s.nodesWhy[a.Protocol]
				if !ok {
					why = nodesWhy(s.nodes, s.cfg, a.Protocol)
					if s.nodesWhy != nil {
						s.nodesWhy[a.Protocol] = why
					}
				}
				st.NoNodeWhy = localWhy(why, svc)
			}
			st.Announcements = append(st.Announcements, a)
		}
	}
	return st
}

// OutputAnnotations are the annotations the provider writes on Services
// for people to read; the service controller does not sync a Service for
// their changes.
func (c *Cloud) OutputAnnotations() []string {
	return append([]string{annotation.Summary}, replica.OutputAnnotations()...)
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

// servicePatcher patches Services' metadata with a client, through the
// status subresource (which takes metadata too): the replicas may patch
// services/status only, never the Services themselves.
type servicePatcher struct{ client kubernetes.Interface }

func (p servicePatcher) PatchAnnotation(ctx context.Context, svc *v1.Service, key, value string) error {
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: value}}})
	if err != nil {
		return err
	}
	_, err = p.client.CoreV1().Services(svc.Namespace).Patch(ctx, svc.Name, types.MergePatchType, body, metav1.PatchOptions{}, "status")
	return err
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
		"metadata": map[string]any{"resourceVersion": svc.ResourceVersion, "annotations": map[string]any{annotation.Summary: ann}},
		"status":   map[string]any{"conditions": conds},
	})
	if err != nil {
		return nil, err
	}
	return p.client.CoreV1().Services(svc.Namespace).Patch(ctx, svc.Name, types.MergePatchType, body, metav1.PatchOptions{}, "status")
}
