package metal

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/config"
)

// AnnotationL2Nodes is written by the provider on Services with addresses
// of pools announced with L2: which node answers for each address, as
// "address=node" pairs separated by commas ("address=" while none does).
const AnnotationL2Nodes = "metal-ccm.io/l2-nodes"

// ReasonL2NodeChanged is the Event of a Service whose L2 address another
// node now answers for.
const ReasonL2NodeChanged = "L2NodeChanged"

// l2Resync bounds how long a Service the writer missed (a write that
// failed) waits for its annotation.
const l2Resync = 30 * time.Second

// l2Patcher writes a Service's annotation (a merge patch of its metadata).
type l2Patcher interface {
	PatchAnnotation(ctx context.Context, svc *v1.Service, key, value string) error
}

// runL2StatusWriter keeps AnnotationL2Nodes of every Service with L2
// addresses equal to what the observer shows, and records an Event when the
// node of an address changes, until ctx ends. Only the leader runs it.
func (c *Cloud) runL2StatusWriter(ctx context.Context, o *l2Observer, services corelisters.ServiceLister, patch l2Patcher) {
	logger := l2Logger(ctx)
	tick := time.NewTicker(l2Resync)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-o.changed:
		case <-tick.C:
		}
		list, err := services.List(labels.Everything())
		if err != nil {
			continue
		}
		lb := c.state.Load().cfg.LoadBalancer
		for _, svc := range list {
			if !c.wantsLoadBalancer(svc) {
				continue
			}
			value, ok := l2Annotation(svc, &lb, o)
			old, had := svc.Annotations[AnnotationL2Nodes]
			if !ok || (had && old == value) || (!had && value == "") {
				continue
			}
			if err := patch.PatchAnnotation(ctx, svc, AnnotationL2Nodes, value); err != nil {
				logger.Error(err, "Cannot show which node answers", "service", klog.KObj(svc))
				continue
			}
			c.eventf(svc, v1.EventTypeNormal, ReasonL2NodeChanged, "L2 addresses answered by: %s (was: %s)", orNone(value), orNone(old))
		}
	}
}

// l2Annotation is AnnotationL2Nodes for svc: its addresses of L2 pools,
// each with the node that answers for it; ok is false while the observer
// knows nothing yet.
func l2Annotation(svc *v1.Service, lb *config.LoadBalancer, o *l2Observer) (string, bool) {
	var pairs []string
	for _, ing := range svc.Status.LoadBalancer.Ingress {
		a, err := netip.ParseAddr(ing.IP)
		if err != nil || !lb.Announces(a, config.ProtocolL2) {
			continue
		}
		node, ok := o.Owner(a)
		if !ok {
			return "", false
		}
		pairs = append(pairs, a.String()+"="+node)
	}
	slices.Sort(pairs)
	return strings.Join(pairs, ","), true
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
