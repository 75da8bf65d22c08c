package main

import (
	"context"
	"errors"
	"maps"
	"time"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/tools/cache"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/app"
	cloudconfig "k8s.io/cloud-provider/app/config"
	servicecontroller "k8s.io/cloud-provider/controllers/service"
	"k8s.io/cloud-provider/names"
	genericcontrollermanager "k8s.io/controller-manager/app"
	"k8s.io/controller-manager/controller"
	"k8s.io/klog/v2"
)

// nodeFollower is implemented by providers whose load balancers follow the
// cluster's nodes by themselves (the metal provider's announcer watches
// nodes in every replica), so that UpdateLoadBalancer has nothing to do.
type nodeFollower interface {
	LoadBalancersFollowNodes() bool
}

// controllerInitializers are upstream's controllers, with the service
// controller started by startServiceController.
func controllerInitializers() map[string]app.ControllerInitFuncConstructor {
	m := maps.Clone(app.DefaultInitFuncConstructors)
	c := m[names.ServiceLBController]
	c.Constructor = startServiceController
	m[names.ServiceLBController] = c
	return m
}

// startServiceController starts the upstream service controller. For a
// provider whose load balancers follow nodes by themselves, the controller
// gets a node informer that delivers it no node events: its node sync, which
// compares every node with every Service's last node list and calls
// UpdateLoadBalancer for every Service on every node change (O(Services x
// nodes) CPU per node event, and a node list kept per Service), would only
// produce an Event per Service per node change. It still lists nodes when a
// Service is synced. Other providers get upstream's controller unchanged.
func startServiceController(initCtx app.ControllerInitContext, cfg *cloudconfig.CompletedConfig, cloud cloudprovider.Interface) app.InitFunc {
	f, ok := cloud.(nodeFollower)
	if !ok || !f.LoadBalancersFollowNodes() {
		return app.StartServiceControllerWrapper(initCtx, cfg, cloud)
	}
	return func(ctx context.Context, cmCtx genericcontrollermanager.ControllerContext) (controller.Interface, bool, error) {
		c, err := servicecontroller.New(
			cloud,
			cfg.ClientBuilder.ClientOrDie(initCtx.ClientName),
			cfg.SharedInformers.Core().V1().Services(),
			quietNodeInformer{cfg.SharedInformers.Core().V1().Nodes()},
			cfg.ComponentConfig.KubeCloudShared.ClusterName,
			utilfeature.DefaultFeatureGate,
		)
		if err != nil {
			// As upstream: a provider without load balancers runs no service controller.
			klog.FromContext(ctx).Error(err, "Not starting the service controller")
			return nil, false, nil
		}
		go c.Run(ctx, int(cfg.ComponentConfig.ServiceController.ConcurrentServiceSyncs), cmCtx.ControllerManagerMetrics)
		return nil, true, nil
	}
}

// quietNodeInformer is the shared node informer (its cache and lister), with
// event handlers that are registered but never called.
type quietNodeInformer struct {
	coreinformers.NodeInformer
}

func (q quietNodeInformer) Informer() cache.SharedIndexInformer {
	return quietInformer{q.NodeInformer.Informer()}
}

// quietInformer registers an empty handler in place of each one it is given.
type quietInformer struct {
	cache.SharedIndexInformer
}

var errNoHandler = errors.New("add node event handler: nil handler")

func (q quietInformer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	if h == nil {
		return nil, errNoHandler
	}
	return q.SharedIndexInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{})
}

func (q quietInformer) AddEventHandlerWithResyncPeriod(h cache.ResourceEventHandler, _ time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return q.AddEventHandler(h)
}

func (q quietInformer) AddEventHandlerWithOptions(h cache.ResourceEventHandler, _ cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	return q.AddEventHandler(h)
}
