package objcache

import "k8s.io/component-base/metrics"

// Metrics are a source's own families, metal_ccm_<source>_..., named like
// the ipmi source's: one family per source keeps each source's results
// (which differ: a BareMetalHost can be "not provisioned", a Rufio Machine
// "unknown") in a label set of its own. Each source defines and registers
// them in its package, where the reference docs' generator reads them.
type Metrics struct {
	// Answers counts answers by result.
	Answers *metrics.CounterVec
	// WatchErrors counts failed lists and watches.
	WatchErrors *metrics.Counter
}

// Answer counts one answer.
func (m *Metrics) Answer(result string) { m.Answers.WithLabelValues(result).Inc() }

// WatchError counts one failed list or watch.
func (m *Metrics) WatchError() { m.WatchErrors.Inc() }
