package metal

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/healthcheck"
	"github.com/metal-ccm/metal-ccm/pkg/outofservice"
)

// outOfServicePeriod is how often the leader looks at the nodes for the
// out-of-service taint (from its cache; it asks the power-state source only
// about NotReady nodes, and the source caches its answers).
const outOfServicePeriod = 2 * time.Second

// runOutOfService runs the out-of-service taint of powered-off nodes
// (nodes.powerState.outOfService), and its fast path's checks of the
// nodes' kube-proxy, on the leader until ctx ends. It always
// runs, so that a node it tainted loses the taint when it is Ready again
// even after the feature was turned off by a reload.
func (c *Cloud) runOutOfService(ctx context.Context, client kubernetes.Interface) {
	select {
	case <-ctx.Done():
		return
	case <-c.lb.informed: // SetInformers gave the nodes
	}
	ctrl := &outofservice.Controller{
		Nodes:  c.nodes,
		Client: client,
		Off:    c.InstanceShutdown,
		Settings: func() outofservice.Settings {
			cfg := c.state.Load().cfg
			ps := cfg.Nodes.PowerState
			s := outofservice.Settings{Enabled: ps.OutOfService.Enabled, ConfirmFor: ps.OutOfService.ConfirmFor.Duration, Source: ps.Source,
				DeletePods: ps.OutOfService.DeletePods != nil && *ps.OutOfService.DeletePods}
			// The fast path's checks are the health checks' (validation
			// refuses a fast path without them).
			if opts, on := healthcheck.FromConfig(cfg.HealthChecks); on && ps.OutOfService.Enabled && ps.OutOfService.FastPath {
				s.FastPath, s.Checks, s.ProxyPort = true, opts, cfg.HealthChecks.Port
			}
			return s
		},
		Event: func(n *v1.Node, eventType, reason, format string, args ...any) {
			c.eventf(n, eventType, reason, format, args...)
		},
		Period: outOfServicePeriod,
	}
	ctrl.Probes = outofservice.NewProbes(ctrl.Poke)
	defer c.watchNodeUpdates(ctx, "out-of-service", ctrl.NodeChanged)()
	ctrl.Run(ctx)
}

// watchNodeUpdates calls changed with each update of a node in the cache
// until the returned function is called. A controller that looks every
// period without it (the handler could not be added) still sees every
// change, later.
func (c *Cloud) watchNodeUpdates(ctx context.Context, name string, changed func(old, cur *v1.Node)) func() {
	reg, err := c.nodeInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(old, cur any) {
		o, ok1 := old.(*v1.Node)
		n, ok2 := cur.(*v1.Node)
		if ok1 && ok2 {
			changed(o, n)
		}
	}})
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Node changes not watched: the controller looks every period", "controller", name, "err", err)
		return func() {}
	}
	return func() { _ = c.nodeInformer.RemoveEventHandler(reg) }
}
