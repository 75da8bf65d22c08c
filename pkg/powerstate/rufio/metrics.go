package rufio

import (
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/metal-ccm/metal-ccm/pkg/powerstate/internal/objcache"
)

// Results counted in metal_ccm_rufio_answers_total.
const (
	resultOff       = "off"
	resultOn        = "on"
	resultUnknown   = "unknown"
	resultNotFound  = "not_found"
	resultNotSynced = "not_synced"
	resultSettings  = "settings"
)

var answers = &objcache.Metrics{
	Answers: metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "metal_ccm",
		Name:           "rufio_answers_total",
		Help:           "Questions of the rufio power-state source, answered from its cache of Rufio Machines, by result: off, on, unknown (status.powerState unknown or missing), not_found, not_synced (no cache yet), settings (no Machine named). Reported by the leader.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"}),
	WatchErrors: metrics.NewCounter(&metrics.CounterOpts{
		Namespace:      "metal_ccm",
		Name:           "rufio_watch_errors_total",
		Help:           "Failed lists and watches of Rufio Machines by the rufio power-state source (the CRD not installed, no right to read them, the API server unreachable). Reported by the leader.",
		StabilityLevel: metrics.ALPHA,
	}),
}

func init() {
	legacyregistry.MustRegister(answers.Answers, answers.WatchErrors)
}
