package replica

import (
	"k8s.io/component-base/metrics"

	"github.com/metal-ccm/metal-ccm/pkg/protocol"
)

// Metrics of the runtime, served on the manager's /metrics (docs/metrics.md).
const namespace = "metal_ccm"

var descOutsidePools = metrics.NewDesc(namespace+"_addresses_outside_pools",
	"Addresses in LoadBalancer Services' status that this replica's announcers leave out because they are in no pool. Reported by every replica that announces or observes (BGP peers, or L2 pools).",
	nil, nil, metrics.ALPHA, "")

// Registrables are the runtime's metrics the provider registers once.
func Registrables() []metrics.Registerable {
	return []metrics.Registerable{healthTransitions, healthCheckDuration, healthPings}
}

// Describe sends the descriptors of what Collect sends.
func Describe(ch chan<- *metrics.Desc) {
	ch <- descOutsidePools
	ch <- descHealthTargets
	for _, p := range protocol.All() {
		for _, d := range p.ReplicaMetrics() {
			ch <- d
		}
	}
}

// Collect sends the health checks' targets and every role's metrics.
func (r *Runtime) Collect(ch chan<- metrics.Metric) {
	if ann := r.announcer.Load(); ann != nil {
		collectHealth(ann, ch)
	}
	rs := r.roles.Load()
	if rs == nil {
		return
	}
	outside := 0
	for _, role := range rs.all {
		role.Collect(ch)
		// Each role looks at every Service: the most one counts.
		outside = max(outside, role.OutsidePools())
	}
	ch <- metrics.NewLazyConstMetric(descOutsidePools, metrics.GaugeValue, float64(outside))
}
