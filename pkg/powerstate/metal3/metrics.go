package metal3

import (
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/metal-ccm/metal-ccm/pkg/powerstate/internal/objcache"
)

// Results counted in metal_ccm_metal3_answers_total.
const (
	resultOff            = "off"
	resultOn             = "on"
	resultNotProvisioned = "not_provisioned"
	resultNoPowerState   = "no_power_state"
	resultNotFound       = "not_found"
	resultGone           = "gone"
	resultNotSynced      = "not_synced"
	resultSettings       = "settings"
)

var answers = &objcache.Metrics{
	Answers: metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "metal_ccm",
		Name:           "metal3_answers_total",
		Help:           "Questions of the metal3 power-state source, answered from its cache of BareMetalHosts, by result: off, on, not_provisioned, no_power_state (status.poweredOn missing), not_found, gone (InstanceExists: a deleted host), not_synced (no cache yet), settings (no host named). Reported by the leader.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"}),
	WatchErrors: metrics.NewCounter(&metrics.CounterOpts{
		Namespace:      "metal_ccm",
		Name:           "metal3_watch_errors_total",
		Help:           "Failed lists and watches of BareMetalHosts by the metal3 power-state source (the CRD not installed, no right to read them, the API server unreachable). Reported by the leader.",
		StabilityLevel: metrics.ALPHA,
	}),
}

func init() {
	legacyregistry.MustRegister(answers.Answers, answers.WatchErrors)
}
