package objcache

import (
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Metrics are a source's own families, metal_ccm_<source>_..., named like
// the ipmi source's: one family per source keeps each source's results
// (which differ: a BareMetalHost can be "not provisioned", a Rufio Machine
// "unknown") in a label set of its own.
type Metrics struct {
	answers     *metrics.CounterVec
	watchErrors *metrics.Counter
}

// NewMetrics registers the families of the source named source, whose
// objects are described by what ("BareMetalHosts"), with the results it may
// count (documented in the help).
func NewMetrics(source, what, results string) *Metrics {
	m := &Metrics{
		answers: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace:      "metal_ccm",
			Name:           source + "_answers_total",
			Help:           "Questions of the " + source + " power-state source, answered from its cache of " + what + ", by result: " + results + ". Reported by the leader.",
			StabilityLevel: metrics.ALPHA,
		}, []string{"result"}),
		watchErrors: metrics.NewCounter(&metrics.CounterOpts{
			Namespace:      "metal_ccm",
			Name:           source + "_watch_errors_total",
			Help:           "Failed lists and watches of " + what + " by the " + source + " power-state source (the CRD not installed, no right to read them, the API server unreachable). Reported by the leader.",
			StabilityLevel: metrics.ALPHA,
		}),
	}
	legacyregistry.MustRegister(m.answers, m.watchErrors)
	return m
}

// Answer counts one answer.
func (m *Metrics) Answer(result string) { m.answers.WithLabelValues(result).Inc() }

// WatchError counts one failed list or watch.
func (m *Metrics) WatchError() { m.watchErrors.Inc() }
