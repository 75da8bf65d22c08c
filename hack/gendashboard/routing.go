package main

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// sessions is a timeline of the sessions of sel (a *_bgp_session_up). A
// session's state is a label of the metric, so the timeline takes the max
// over it: one line per process and peer, whatever the state.
func sessions(title, desc, sel string) cog.Builder[dashboard.Panel] {
	return upDown(title, desc, bad("down"), good("established"), 8,
		query{"max by (instance, peer) (" + sel + ")", "{{instance}} to {{peer}}"})
}

// bfdSessions is a timeline of the BFD sessions of sel (a
// *_bgp_bfd_session_up): one line per process and peer with BFD.
func bfdSessions(title, desc, sel string) cog.Builder[dashboard.Panel] {
	return upDown(title, desc, bad("down"), good("up"), 8,
		query{"max by (instance, peer) (" + sel + ")", "{{instance}} to {{peer}}"})
}

// bgp is the replicas' BGP speakers.
func bgp() row {
	return row{"BGP (replicas)", []cog.Builder[dashboard.Panel]{
		sessions("Replica sessions", "Each replica's BGP session to each router: established or not. A replica whose session is down gets no traffic from that router.",
			ccm("metal_ccm_bgp_session_up")),
		bfdSessions("Replica BFD sessions", "Each replica's BFD session to each router with bgp.peers[].bfd: up or not. A BFD session that fails resets its BGP session; one that never comes up means the router runs no BFD for it.",
			ccm("metal_ccm_bgp_bfd_session_up")),
		series("Replica prefixes announced", "Prefixes (LoadBalancer addresses, pod CIDRs) each replica announces to its peers. Replicas that announce the same addresses show the same count.",
			look{unit: "short", min: ptr(0.0)},
			query{ccm("metal_ccm_bgp_announced_prefixes"), "{{instance}}"}),
		series("Addresses outside the pools", "Addresses in Services' status that the replicas and node agents leave out because no pool holds them. Above 0: someone wrote an address outside the pools into a status (a Warning AddressOutsidePools is on the Service).",
			look{unit: "short", min: ptr(0.0)},
			query{"max(" + ccm("metal_ccm_addresses_outside_pools") + ")", "replicas"},
			query{"max(" + agent("metal_ccm_agent_addresses_outside_pools") + ")", "agents"}),
		series("Sessions not established by state", "BGP sessions that are down, by the state they are in (idle, connect, active: no TCP connection; opensent, openconfirm: the routers disagree on the session).",
			look{unit: "short", min: ptr(0.0), stacked: true},
			query{"count by (state) (" + ccm("metal_ccm_bgp_session_up") + " == 0)", "replicas {{state}}"},
			query{"count by (state) (" + agent("metal_ccm_agent_bgp_session_up") + " == 0)", "agents {{state}}"}),
	}}
}

// agents is the node agents' BGP speakers (bgp.announceFrom: Nodes).
func agents() row {
	return row{"BGP (node agents)", []cog.Builder[dashboard.Panel]{
		sessions("Agent sessions", "Each node agent's BGP session to each router: established or not. A node whose session is down carries no LoadBalancer traffic from that router.",
			agent("metal_ccm_agent_bgp_session_up")),
		bfdSessions("Agent BFD sessions", "Each node agent's BFD session to each router with bgp.peers[].bfd: up or not. The router drops a node's paths when its BFD session fails (a node powered off: within interval × multiplier).",
			agent("metal_ccm_agent_bgp_bfd_session_up")),
		series("Agent prefixes announced", "Prefixes each node agent announces (its node's share), stacked.",
			look{unit: "short", min: ptr(0.0), stacked: true},
			query{agent("metal_ccm_agent_bgp_announced_prefixes"), "{{instance}}"}),
		series("Agents reporting", "Node agents Prometheus scrapes. A drop is an agent gone or not scraped: its node announces nothing.",
			look{unit: "short", min: ptr(0.0)},
			query{"count(" + agent("metal_ccm_agent_bgp_announced_prefixes") + ")", "agents"}),
	}}
}
