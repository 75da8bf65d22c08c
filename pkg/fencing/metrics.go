package fencing

import (
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Results of a fencing decision, the label of fencingTotal.
const (
	resultFenced = "fenced"
	resultDryRun = "dry_run"
	resultHeld   = "held"
	resultError  = "error"
)

var fencingTotal = metrics.NewCounterVec(&metrics.CounterOpts{
	Namespace:      "metal_ccm",
	Name:           "fencing_total",
	Help:           "Nodes due to be fenced (NotReady past fencing.after while the source says On), by result: fenced (powered off through the BMC), dry_run (only the Event WouldFence), held (as many fenced nodes not Ready again as fencing.maxNodes allows: it waits; counted once per node and hold), error (the BMC refused the power-off). Reported by the leader.",
	StabilityLevel: metrics.ALPHA,
}, []string{"result"})

func init() {
	legacyregistry.MustRegister(fencingTotal)
}

func count(result string) { fencingTotal.WithLabelValues(result).Inc() }
