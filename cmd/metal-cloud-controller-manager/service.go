package main

import (
	"context"
	"fmt"
	"maps"

	"k8s.io/client-go/kubernetes"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/app"
	cloudconfig "k8s.io/cloud-provider/app/config"
	"k8s.io/cloud-provider/names"
	genericcontrollermanager "k8s.io/controller-manager/app"
	"k8s.io/controller-manager/controller"
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/extension"
	"github.com/metal-ccm/metal-ccm/pkg/lbcontroller"
)

// controllerInitializers are upstream's controllers, with the service
// controller started by startServiceController and the cloud node
// controller by startCloudNodeController. Each runs until the leader
// election ends or a signal comes, so that a stopping replica writes nothing
// while it hands the Lease over; starting one marks this replica the leader.
func (m *manager) controllerInitializers() map[string]app.ControllerInitFuncConstructor {
	out := maps.Clone(app.DefaultInitFuncConstructors)
	c := out[names.ServiceLBController]
	c.Constructor = startServiceController
	out[names.ServiceLBController] = c
	c = out[names.CloudNodeController]
	c.Constructor = startCloudNodeController
	out[names.CloudNodeController] = c
	for name, c := range out {
		construct := c.Constructor
		c.Constructor = func(initCtx app.ControllerInitContext, cfg *cloudconfig.CompletedConfig, cloud cloudprovider.Interface) app.InitFunc {
			start := construct(initCtx, cfg, cloud)
			return func(ctx context.Context, cmCtx genericcontrollermanager.ControllerContext) (controller.Interface, bool, error) {
				if m.election != nil {
					m.election.leading.Store(true)
				}
				ctx, cancel := context.WithCancel(ctx)
				context.AfterFunc(m.ctx, cancel)
				return start(ctx, cmCtx)
			}
		}
		out[name] = c
	}
	return out
}

// startServiceController starts, for a provider whose load balancers follow
// nodes by themselves, pkg/lbcontroller: the service controller without
// upstream's node sync, which compares every node with every Service's last
// node list and calls UpdateLoadBalancer for every Service on every node
// change (O(Services x nodes) CPU per node event, a node list kept per
// Service, and an Event per Service per node change). Other providers get
// upstream's controller.
func startServiceController(initCtx app.ControllerInitContext, cfg *cloudconfig.CompletedConfig, cloud cloudprovider.Interface) app.InitFunc {
	svcs := extension.Of(cloud).Services
	if svcs == nil {
		return app.StartServiceControllerWrapper(initCtx, cfg, cloud)
	}
	return func(ctx context.Context, cmCtx genericcontrollermanager.ControllerContext) (controller.Interface, bool, error) {
		balancer, ok := cloud.LoadBalancer()
		if !ok {
			// As upstream: a provider without load balancers runs no service controller.
			klog.FromContext(ctx).Info("Not starting the service controller: the provider offers no load balancers")
			return nil, false, nil
		}
		// Events get a client of their own (same identity, own rate limit):
		// an Event per Service must not halve how fast addresses are written.
		events, err := kubernetes.NewForConfig(cfg.ClientBuilder.ConfigOrDie(initCtx.ClientName))
		if err != nil {
			return nil, false, fmt.Errorf("start service controller: %w", err)
		}
		c, err := lbcontroller.New(balancer, svcs.Rule, cfg.ClientBuilder.ClientOrDie(initCtx.ClientName), events,
			cfg.SharedInformers.Core().V1().Services(), cfg.ComponentConfig.KubeCloudShared.ClusterName, svcs.OutputAnnotations...)
		if err != nil {
			return nil, false, fmt.Errorf("start service controller: %w", err)
		}
		// Before Run, and before the informers start: no Service event
		// reaches the provider before it can requeue.
		if svcs.SetRequeue != nil {
			svcs.SetRequeue(c.Requeue)
		}
		if svcs.SetBusy != nil {
			svcs.SetBusy(c.Busy)
		}
		cmCtx.ControllerManagerMetrics.ControllerStarted("service")
		go func() {
			defer cmCtx.ControllerManagerMetrics.ControllerStopped("service")
			c.Run(ctx, int(cfg.ComponentConfig.ServiceController.ConcurrentServiceSyncs))
		}()
		return nil, true, nil
	}
}
