package redfish

import (
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Results of a question to a BMC, the label of requestsTotal.
const (
	resultOff          = "off"
	resultOn           = "on"
	resultOther        = "other"
	resultTimeout      = "timeout"
	resultUnauthorized = "unauthorized"
	resultError        = "error"
	resultSettings     = "settings"
)

var (
	requestsTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "metal_ccm",
		Name:           "redfish_requests_total",
		Help:           "Questions of the redfish power-state source by result: off, on, other (a PowerState neither On nor Off), timeout (no answer in time), unauthorized (credentials refused), error (TLS, no such system, malformed answer...), settings (a machine's settings unusable). Reported by the leader.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	requestDuration = metrics.NewHistogram(&metrics.HistogramOpts{
		Namespace:      "metal_ccm",
		Name:           "redfish_request_duration_seconds",
		Help:           "Time of one question to a Redfish BMC (a login when needed, the system's resource). Reported by the leader.",
		Buckets:        []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
		StabilityLevel: metrics.ALPHA,
	})
	cachedAnswers = metrics.NewCounter(&metrics.CounterOpts{
		Namespace:      "metal_ccm",
		Name:           "redfish_cached_answers_total",
		Help:           "Questions of the redfish power-state source answered from its cache (settings.cacheAge) without asking the BMC. Reported by the leader.",
		StabilityLevel: metrics.ALPHA,
	})
)

func init() {
	legacyregistry.MustRegister(requestsTotal, requestDuration, cachedAnswers)
}

func count(result string) { requestsTotal.WithLabelValues(result).Inc() }
