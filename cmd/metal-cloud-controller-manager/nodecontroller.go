package main

import (
	"context"
	"fmt"

	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/app"
	cloudconfig "k8s.io/cloud-provider/app/config"
	cloudnodecontroller "k8s.io/cloud-provider/controllers/node"
	genericcontrollermanager "k8s.io/controller-manager/app"
	"k8s.io/controller-manager/controller"
	"k8s.io/klog/v2"
)

// startCloudNodeController starts upstream's cloud node controller as
// upstream does, except that its Events (a "Synced" per node) go through a
// client of their own (same identity, own rate limit). With one client, a
// node joining took two requests from the client's budget, the Update that
// removes the uninitialized taint and the Event, so a rack joining at once
// was initialized at half the pace --kube-api-qps allows.
func startCloudNodeController(initCtx app.ControllerInitContext, cfg *cloudconfig.CompletedConfig, cloud cloudprovider.Interface) app.InitFunc {
	return func(ctx context.Context, cmCtx genericcontrollermanager.ControllerContext) (controller.Interface, bool, error) {
		events, err := kubernetes.NewForConfig(cfg.ClientBuilder.ConfigOrDie(initCtx.ClientName))
		if err != nil {
			return nil, false, fmt.Errorf("start cloud node controller: %w", err)
		}
		c, err := cloudnodecontroller.NewCloudNodeController(
			cfg.SharedInformers.Core().V1().Nodes(),
			eventsApart{Interface: cfg.ClientBuilder.ClientOrDie(initCtx.ClientName), events: events},
			cloud,
			cfg.ComponentConfig.NodeStatusUpdateFrequency.Duration,
			cfg.ComponentConfig.NodeController.ConcurrentNodeSyncs,
			cfg.ComponentConfig.NodeController.ConcurrentNodeStatusUpdates,
		)
		if err != nil {
			// As upstream: a provider without instances runs no cloud node controller.
			klog.FromContext(ctx).Info("Not starting the cloud node controller", "err", err)
			return nil, false, nil
		}
		go c.RunWithContext(ctx, cmCtx.ControllerManagerMetrics)
		return nil, true, nil
	}
}

// eventsApart is a clientset whose core Events go through another one.
type eventsApart struct {
	kubernetes.Interface
	events kubernetes.Interface
}

func (c eventsApart) CoreV1() corev1client.CoreV1Interface {
	return coreEventsApart{CoreV1Interface: c.Interface.CoreV1(), events: c.events.CoreV1()}
}

type coreEventsApart struct {
	corev1client.CoreV1Interface
	events corev1client.CoreV1Interface
}

func (c coreEventsApart) Events(namespace string) corev1client.EventInterface {
	return c.events.Events(namespace)
}
