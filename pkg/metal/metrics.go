package metal

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/metal-ccm/metal-ccm/pkg/replica"
)

// Metrics of the metal provider, served on the manager's /metrics. Every
// metric is listed in docs/metrics.md.
const namespace = "metal_ccm"

var (
	allocations = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      namespace,
		Name:           "allocations_total",
		Help:           "LoadBalancer allocations by result: ok, or the Event reason of a refusal.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})

	statusWrites = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      namespace,
		Name:           "service_status_writes_total",
		Help:           "Writes of the Services' conditions and announcement summary by result: ok or error.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	servicesAnnounced = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace:      namespace,
		Name:           "services_by_announced_reason",
		Help:           "LoadBalancer Services by the reason of their metal-ccm.io/Announced condition (Announced, OutsidePools, NoEligibleNode, NoSessionUp, NotSentToAnyPeer, NoAddress, Unknown). Reported by the leader.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"reason"})

	descPoolSize = metrics.NewDesc(namespace+"_pool_addresses",
		"Addresses in a pool, by family (capped at 2^64-1). Reported by the leader.",
		[]string{"pool", "family"}, nil, metrics.ALPHA, "")
	descPoolUsed = metrics.NewDesc(namespace+"_pool_addresses_used",
		"Addresses of a pool held by Services, by family. Reported by the leader.",
		[]string{"pool", "family"}, nil, metrics.ALPHA, "")

	registerOnce sync.Once
)

// collector reads pool usage and the replica runtime at scrape time.
type collector struct {
	metrics.BaseStableCollector
	cloud *Cloud
}

func (c *collector) DescribeWithStability(ch chan<- *metrics.Desc) {
	ch <- descPoolSize
	ch <- descPoolUsed
	replica.Describe(ch)
}

func (c *collector) CollectWithStability(ch chan<- metrics.Metric) {
	if c.cloud.lb.synced != nil {
		for _, u := range c.cloud.lb.alloc.Usage() {
			ch <- metrics.NewLazyConstMetric(descPoolSize, metrics.GaugeValue, float64(u.Size), u.Pool, u.Family.String())
			ch <- metrics.NewLazyConstMetric(descPoolUsed, metrics.GaugeValue, float64(u.Used), u.Pool, u.Family.String())
		}
	}
	c.cloud.replica.Collect(ch)
}

// registerMetrics registers the provider's metrics once per process.
func registerMetrics(c *Cloud) {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(allocations, configReloads, configLastReloadOK, statusWrites, servicesAnnounced)
		legacyregistry.MustRegister(replica.Registrables()...)
		legacyregistry.CustomMustRegister(&collector{cloud: c})
	})
}
