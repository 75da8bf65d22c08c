package metal

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
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
	descSession = metrics.NewDesc(namespace+"_bgp_session_up",
		"1 when the BGP session to a peer is established, else 0. Reported by every replica.",
		[]string{"peer", "state"}, nil, metrics.ALPHA, "")
	descPrefixes = metrics.NewDesc(namespace+"_bgp_announced_prefixes",
		"Prefixes this replica announces. Reported by every replica.",
		nil, nil, metrics.ALPHA, "")
	descOutsidePools = metrics.NewDesc(namespace+"_addresses_outside_pools",
		"Addresses in LoadBalancer Services' status that this replica's BGP announcer leaves out because no pool announced with BGP holds them. Reported by every replica with BGP peers.",
		nil, nil, metrics.ALPHA, "")

	registerOnce sync.Once
)

// collector reads pool usage and the backends' state at scrape time.
type collector struct {
	metrics.BaseStableCollector
	cloud *Cloud
}

func (c *collector) DescribeWithStability(ch chan<- *metrics.Desc) {
	for _, d := range []*metrics.Desc{descPoolSize, descPoolUsed, descSession, descPrefixes, descOutsidePools, descHealthTargets} {
		ch <- d
	}
}

func (c *collector) CollectWithStability(ch chan<- metrics.Metric) {
	if c.cloud.lb.synced != nil {
		for _, u := range c.cloud.lb.alloc.Usage() {
			ch <- metrics.NewLazyConstMetric(descPoolSize, metrics.GaugeValue, float64(u.Size), u.Pool, u.Family.String())
			ch <- metrics.NewLazyConstMetric(descPoolUsed, metrics.GaugeValue, float64(u.Used), u.Pool, u.Family.String())
		}
	}
	if bs := c.cloud.backends.Load(); bs != nil {
		for _, b := range *bs {
			b.Collect(ch)
		}
	}
	if ann := c.cloud.announcer.Load(); ann != nil {
		collectHealth(ann, ch)
	}
	if a := c.cloud.announced.Load(); a != nil {
		ch <- metrics.NewLazyConstMetric(descOutsidePools, metrics.GaugeValue, float64(a.outside()))
	}
}

// registerMetrics registers the provider's metrics once per process.
func registerMetrics(c *Cloud) {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(allocations, configReloads, configLastReloadOK, healthTransitions, healthCheckDuration, statusWrites, servicesAnnounced)
		legacyregistry.CustomMustRegister(&collector{cloud: c})
	})
}
