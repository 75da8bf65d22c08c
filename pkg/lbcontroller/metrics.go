package lbcontroller

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

var (
	syncs = metrics.NewCounter(&metrics.CounterOpts{
		Namespace:      "metal_ccm",
		Name:           "service_syncs_total",
		Help:           "Syncs of a Service by the service controller (the leader's): one per Service change, retry or cleanup; node changes cause none.",
		StabilityLevel: metrics.ALPHA,
	})
	registerOnce sync.Once
)

func registerMetrics() {
	registerOnce.Do(func() { legacyregistry.MustRegister(syncs) })
}
