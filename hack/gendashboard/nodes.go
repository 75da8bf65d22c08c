package main

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// health is the replicas' checks of the next hops they announce.
func health() row {
	return row{"Next-hop health", []cog.Builder[dashboard.Panel]{
		series("Health-check targets by state", "Each replica's health-check targets (kube-proxy of each eligible node, and each node of a Local Service) by state.",
			look{unit: "short", min: ptr(0.0), span: 6},
			query{"sum by (instance, state) (" + ccm("metal_ccm_node_health_targets") + ")", "{{instance}} {{state}}"}),
		series("Unhealthy share", "Share of each replica's targets that fail. At 100% the replica reaches no node and announces every eligible one (fail open).",
			look{unit: "percentunit", min: ptr(0.0), max: ptr(1.0), span: 6, thresholds: []dashboard.Threshold{
				{Color: "green"}, {Value: ptr(0.01), Color: "orange"}, {Value: ptr(1.0), Color: "red"}}},
			query{"sum by (instance) (" + ccm("metal_ccm_node_health_targets", `state="unhealthy"`) + ") / sum by (instance) (" +
				ccm("metal_ccm_node_health_targets") + ")", "{{instance}}"}),
		series("Health transitions", "Changes of a target's state per second, by new state. A steady rate is a flapping node or network.",
			look{unit: "cps", min: ptr(0.0), span: 6},
			query{"sum by (instance, state) (rate(" + ccm("metal_ccm_node_health_transitions_total") + rateInterval + "))", "{{instance}} {{state}}"}),
		series("Health check time (p95)", "95th percentile of one check's time, by result. Failures at the check timeout are nodes that do not answer at all.",
			look{unit: "s", min: ptr(0.0), span: 6},
			query{"histogram_quantile(0.95, sum by (le, result) (rate(" + ccm("metal_ccm_node_health_check_duration_seconds_bucket") + rateInterval + ")))", "{{result}}"}),
		series("Pings", "Pings of the nodes between their HTTP checks per second, by result. None: the replica may not open ping sockets (its log says so at start) or healthChecks.httpInterval equals the interval; failures are lost pings, each followed at once by an HTTP check.",
			look{unit: "cps", min: ptr(0.0), span: 6},
			query{"sum by (instance, result) (rate(" + ccm("metal_ccm_node_health_pings_total") + rateInterval + "))", "{{instance}} {{result}}"}),
	}}
}

// l2 is the node agents that answer ARP and Neighbor Solicitations.
func l2() row {
	return row{"L2", []cog.Builder[dashboard.Panel]{
		series("L2 addresses answered", "L2 addresses each node agent answers for, stacked: the top is every L2 address, each answered by one node.",
			look{unit: "short", min: ptr(0.0), span: 6, stacked: true},
			query{agent("metal_ccm_agent_l2_answered_addresses"), "{{instance}}"}),
		series("L2 takeovers", "Addresses a node agent began to answer for, per interval: a node failing over, joining, or an agent starting.",
			look{unit: "short", min: ptr(0.0), span: 6},
			query{"increase(" + agent("metal_ccm_agent_l2_takeovers_total") + rateInterval + ")", "{{instance}}"}),
		series("L2 members seen", "L2 agents each agent sees alive, itself included. All agents should see the same number; one that sees fewer is cut off from the others.",
			look{unit: "short", min: ptr(0.0), span: 6},
			query{agent("metal_ccm_agent_l2_members"), "{{instance}}"}),
		series("L2 members ignored", "Members each agent sees alive but ignores: not a selected Ready node, or claiming another node's name or addresses. Above 0: an agent on a node l2.nodeSelector leaves out, or a rogue member.",
			look{unit: "short", min: ptr(0.0), span: 6},
			query{agent("metal_ccm_agent_l2_ignored_members"), "{{instance}}"}),
		upDown("L2 majority", "Whether each agent sees a majority of the expected agents and may answer. An agent without one stops answering.",
			bad("cut off"), good("majority"), 6,
			query{agent("metal_ccm_agent_l2_majority"), "{{instance}}"}),
		upDown("L2 nodes forwarding", "Whether each agent's node passes its kube-proxy health check. A node that fails it answers for no L2 address while another candidate can.",
			bad("kube-proxy failing"), good("forwards"), 6,
			query{agent("metal_ccm_agent_l2_node_forwards"), "{{instance}}"}),
		series("L2 address conflicts", "L2 addresses held by a host outside the cluster, as each agent found them (a probe answered by a foreign MAC) and as each replica's observer sees the agents report them. No node answers them until that host lets them go; the Service has a Warning Event L2AddressConflict naming the host's MAC.",
			look{unit: "short", min: ptr(0.0), span: 12},
			query{agent("metal_ccm_agent_l2_address_conflicts"), "agent {{instance}}"},
			query{ccm("metal_ccm_l2_address_conflicts"), "replica {{instance}}"}),
	}}
}

// power is the leader's questions to the machines' BMCs, by source, to
// the objects of Metal3 and Rufio that hold their power state, and its
// fencing.
func power() row {
	return row{"Power state", []cog.Builder[dashboard.Panel]{
		series("BMC answers", "Questions to BMCs per second by source and answer. timeout, unauthorized, error, other and settings are never taken as a shutdown: their nodes are not reported shut down.",
			look{unit: "reqps", min: ptr(0.0), span: 8, stacked: true},
			query{"sum by (result) (rate(" + ccm("metal_ccm_ipmi_requests_total") + rateInterval + "))", "ipmi {{result}}"},
			query{"sum by (result) (rate(" + ccm("metal_ccm_redfish_requests_total") + rateInterval + "))", "redfish {{result}}"}),
		series("BMC question time (p95)", "95th percentile of one question to a BMC, by source (ipmi: session, chassis status, close; redfish: a login when needed, the system's resource).",
			look{unit: "s", min: ptr(0.0), span: 8},
			query{"histogram_quantile(0.95, sum by (le) (rate(" + ccm("metal_ccm_ipmi_request_duration_seconds_bucket") + rateInterval + ")))", "ipmi p95"},
			query{"histogram_quantile(0.95, sum by (le) (rate(" + ccm("metal_ccm_redfish_request_duration_seconds_bucket") + rateInterval + ")))", "redfish p95"}),
		series("BMC answers from the cache", "Questions answered from the source's cache (cacheAge) without asking the BMC, per second, by source.",
			look{unit: "reqps", min: ptr(0.0), span: 8},
			query{"sum(rate(" + ccm("metal_ccm_ipmi_cached_answers_total") + rateInterval + "))", "ipmi"},
			query{"sum(rate(" + ccm("metal_ccm_redfish_cached_answers_total") + rateInterval + "))", "redfish"}),
		series("Metal3 host answers", "Questions of the metal3 source per second by answer, from its cache of BareMetalHosts. not_provisioned, no_power_state, not_found, not_synced and settings are never taken as a shutdown; gone is a deleted host, whose node upstream deletes.",
			look{unit: "reqps", min: ptr(0.0), span: 8, stacked: true},
			query{"sum by (result) (rate(" + ccm("metal_ccm_metal3_answers_total") + rateInterval + "))", "{{result}}"}),
		series("Rufio machine answers", "Questions of the rufio source per second by answer, from its cache of Rufio Machines. unknown, not_found, not_synced and settings are never taken as a shutdown.",
			look{unit: "reqps", min: ptr(0.0), span: 8, stacked: true},
			query{"sum by (result) (rate(" + ccm("metal_ccm_rufio_answers_total") + rateInterval + "))", "{{result}}"}),
		series("Power-state watch errors", "Failed lists and watches of BareMetalHosts (metal3) or Rufio Machines (rufio) per second: the CRD not installed, no right to read them (the chart's powerState switches), the API server unreachable.",
			look{unit: "reqps", min: ptr(0.0), span: 8},
			query{"sum(rate(" + ccm("metal_ccm_metal3_watch_errors_total") + rateInterval + "))", "metal3"},
			query{"sum(rate(" + ccm("metal_ccm_rufio_watch_errors_total") + rateInterval + "))", "rufio"}),
		series("Fencing", "Nodes due to be fenced (NotReady past fencing.after while the source says On), per interval, by result: fenced (powered off through the BMC), dry_run (only the Event WouldFence), held (as many fenced nodes not Ready again as fencing.maxNodes allows: it waits), error (the BMC refused the power-off).",
			look{unit: "short", min: ptr(0.0), span: 8, stacked: true},
			query{"sum by (result) (increase(" + ccm("metal_ccm_fencing_total") + rateInterval + "))", "{{result}}"}),
	}}
}
