package l2

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/annotation"
	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/protocol"
	"github.com/metal-ccm/metal-ccm/pkg/svcstatus"
)

// ReasonL2NodeChanged is the Event of a Service whose L2 address another
// node now answers for.
const ReasonL2NodeChanged = "L2NodeChanged"

// ReasonL2AddressConflict is the Warning Event of a Service whose L2
// address a host outside the cluster holds (the reason of its Announced
// condition too).
const ReasonL2AddressConflict = svcstatus.ReasonL2AddressConflict

// resync bounds how long a Service the writer missed (a write that failed)
// waits for its annotation.
const resync = 30 * time.Second

// Lead keeps annotation.L2Nodes of every served Service with L2 addresses
// equal to what the observer shows, and records an Event when the node of
// an address changes, and a Warning when a host outside the cluster holds
// one (conflictEvents), until ctx ends.
func (o *observer) Lead(ctx context.Context, env protocol.LeaderEnv) {
	logger := logger(ctx)
	tick := time.NewTicker(resync)
	defer tick.Stop()
	warned := map[conflictKey]string{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-o.changed:
		case <-tick.C:
		}
		list, err := o.services.List(labels.Everything())
		if err != nil {
			continue
		}
		lb := env.Config().LoadBalancer
		o.conflictEvents(list, &lb, env, warned)
		for _, svc := range list {
			if !o.wants(svc) {
				continue
			}
			value, ok := o.annotation(svc, &lb)
			old, had := svc.Annotations[annotation.L2Nodes]
			if !ok || (had && old == value) || (!had && value == "") {
				continue
			}
			if err := env.PatchAnnotation(ctx, svc, annotation.L2Nodes, value); err != nil {
				logger.Error(err, "Cannot show which node answers", "service", klog.KObj(svc))
				continue
			}
			env.Event(svc, v1.EventTypeNormal, ReasonL2NodeChanged, "L2 addresses answered by: %s (was: %s)", orNone(value), orNone(old))
		}
	}
}

// annotation is annotation.L2Nodes for svc: its addresses of L2 pools,
// each with the node that answers for it; ok is false while the observer
// knows nothing yet.
func (o *observer) annotation(svc *v1.Service, lb *config.LoadBalancer) (string, bool) {
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
