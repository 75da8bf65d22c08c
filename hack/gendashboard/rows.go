package main

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// row is a titled line of panels. docs/dashboard.md has a section per row
// and a paragraph per panel, under the same titles.
type row struct {
	title  string
	panels []cog.Builder[dashboard.Panel]
}

func rows() []row {
	return []row{overview(), pools(), bgp(), agents(), health(), l2(), power(), replicas()}
}

// Grafana's own interval variables; the test replaces them before parsing.
const (
	rateInterval = "[$__rate_interval]"
	lastHour     = "[1h]"
)

// zeroIfNone makes an empty result (nothing counted) read as 0, so that a
// stat panel shows a green 0 rather than "No data".
func zeroIfNone(expr string) string { return expr + " or vector(0)" }

// overview is a line of numbers, each red when something needs a look; the
// rows below show which pool, peer, node or replica it is.
func overview() row {
	return row{"Overview", []cog.Builder[dashboard.Panel]{
		single("Fullest pool", "Usage of the fullest pool and family. Red from 90%, where MetalCCMPoolAlmostFull fires.",
			look{unit: "percentunit", thresholds: redAbove(0.9)},
			query{"max(" + ccm("metal_ccm_pool_addresses_used") + " / " + ccm("metal_ccm_pool_addresses") + ")", ""}),
		single("Refused allocations (1h)", "LoadBalancer allocations refused in the last hour, every reason. Red from one: a Service waits for an address (its Events say why).",
			look{unit: "short", thresholds: redAbove(1)},
			query{zeroIfNone("sum(increase(" + ccm("metal_ccm_allocations_total", `result!="ok"`) + lastHour + "))"), ""}),
		single("Services not announced", "LoadBalancer Services whose metal-ccm.io/Announced condition is False for a reason other than NoAddress (leader). Red from one: an address reaches no router (its condition says why).",
			look{unit: "short", thresholds: redAbove(1)},
			query{zeroIfNone("sum(" + ccm("metal_ccm_services_by_announced_reason", `reason=~"NoEligibleNode|NoSessionUp|NotSentToAnyPeer"`) + ")"), ""}),
		countZero("Replica sessions down", "BGP sessions of the replicas that are not established. Red from one (MetalCCMBGPSessionDown).",
			ccm("metal_ccm_bgp_session_up")),
		countZero("Agent sessions down", "BGP sessions of the node agents that are not established. Red from one.",
			agent("metal_ccm_agent_bgp_session_up")),
		countZero("L2 agents cut off", "L2 node agents that see no majority of the others (they stop answering). Red from one.",
			agent("metal_ccm_agent_l2_majority")),
		countZero("Refused configs", "Replicas whose last changed cloud-config was refused. Red from one (MetalCCMConfigReloadFailing).",
			ccm("metal_ccm_config_last_reload_successful")),
	}}
}

// countZero is a stat of the 0/1 series of sel that are 0, red from one.
func countZero(title, desc, sel string) cog.Builder[dashboard.Panel] {
	return single(title, desc, look{unit: "short", thresholds: redAbove(1)}, query{zeroIfNone("count(" + sel + " == 0)"), ""})
}

// pools is the leader's address management.
func pools() row {
	return row{"Pools and allocations", []cog.Builder[dashboard.Panel]{
		series("Pool usage", "Share of each pool's addresses held by Services, per family (leader). At 100% new Services of the pool wait (PoolExhausted).",
			look{unit: "percentunit", min: ptr(0.0), max: ptr(1.0), thresholds: redAbove(0.9)},
			query{ccm("metal_ccm_pool_addresses_used") + " / " + ccm("metal_ccm_pool_addresses"), "{{pool}} {{family}}"}),
		series("Free addresses", "Addresses of each pool no Service holds, per family (leader; IPv6 pools over 2^64 addresses show 2^64-1).",
			look{unit: "short", min: ptr(0.0)},
			query{ccm("metal_ccm_pool_addresses") + " - " + ccm("metal_ccm_pool_addresses_used"), "{{pool}} {{family}}"}),
		series("Allocations by result", "Address allocations per second: ok, or the reason of a refusal (the Event reason on the Service).",
			look{unit: "cps", min: ptr(0.0)},
			query{"sum by (result) (rate(" + ccm("metal_ccm_allocations_total") + rateInterval + "))", "{{result}}"}),
		series("Services by Announced reason", "LoadBalancer Services by the reason of their metal-ccm.io/Announced condition (leader): Announced, or why not (NoEligibleNode, NoSessionUp, NotSentToAnyPeer, NoAddress).",
			look{unit: "short", min: ptr(0.0)},
			query{"sum by (reason) (" + ccm("metal_ccm_services_by_announced_reason") + ")", "{{reason}}"}),
	}}
}
