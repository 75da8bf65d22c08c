package l2

import "k8s.io/component-base/metrics"

// The node agent's L2 metrics (docs/metrics.md).
var (
	descAnswering = metrics.NewDesc("metal_ccm_agent_l2_answered_addresses",
		"L2 addresses the node agent answers ARP or Neighbor Solicitations for.", nil, nil, metrics.ALPHA, "")
	descTakeovers = metrics.NewDesc("metal_ccm_agent_l2_takeovers_total",
		"Times the node agent began to answer for an L2 address.", nil, nil, metrics.ALPHA, "")
	descMembers = metrics.NewDesc("metal_ccm_agent_l2_members",
		"L2 agents the node agent sees alive in the membership, itself included.", nil, nil, metrics.ALPHA, "")
	descIgnored = metrics.NewDesc("metal_ccm_agent_l2_ignored_members",
		"Members the node agent sees alive in the L2 membership that it ignores: not named as a node l2.nodeSelector selects (Ready), or claiming addresses that are not that node's InternalIPs.", nil, nil, metrics.ALPHA, "")
	descForwards = metrics.NewDesc("metal_ccm_agent_l2_node_forwards",
		"1 while the node can carry L2 addresses: its kube-proxy passes its health check (or healthChecks.enabled is false), the agent has decided on a synced view and that view is not stale; 0 while the other nodes answer for them.", nil, nil, metrics.ALPHA, "")
	descAgentConflicts = metrics.NewDesc("metal_ccm_agent_l2_address_conflicts",
		"L2 addresses the node agent found held by a host outside the cluster (a claim confirmed by a probe): no node answers them until that host lets them go.", nil, nil, metrics.ALPHA, "")
	descMajority = metrics.NewDesc("metal_ccm_agent_l2_majority",
		"1 while the L2 agents the node agent sees alive are a majority of the expected ones (it may answer), else 0.", nil, nil, metrics.ALPHA, "")

	// The replicas' (the observer's).
	descConflicts = metrics.NewDesc("metal_ccm_l2_address_conflicts",
		"L2 addresses that some node agent reports held by a host outside the cluster, as this replica's observer sees the membership: no node answers them.", nil, nil, metrics.ALPHA, "")
)
