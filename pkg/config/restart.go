package config

import "reflect"

// RestartField is a part of the config that a reload does not apply
// everywhere at once: the processes that read it at start keep their
// start's value until they restart. The reload path logs the ones a new
// config changes (ChangedAtRestart) and the generated reference writes Note
// beside each, both from RestartFields, so that the two cannot disagree.
type RestartField struct {
	// Path is the field or section as the reference writes it.
	Path string
	// Note says what waits for a restart, and what follows at once.
	Note string
	// Restarts are the processes that read it only at start: a change
	// restarts them (they stop cleanly and their pods' restart policy
	// starts them again).
	Restarts Role
	// value is what a reload compares.
	value func(*CloudConfig) any
}

// Role is a set of metal-ccm's processes.
type Role uint8

// The processes that read the config.
const (
	// Replicas are the cloud-controller-manager's replicas.
	Replicas Role = 1 << iota
	// Agents are the node agents.
	Agents
)

// RestartFields are every part of the config that waits for a restart, in
// the order the reference lists them.
var RestartFields = []RestartField{
	{Path: "nodes.kubeletServing.approveCSRs", Note: "Applies at the next restart of the replicas (the watch on CertificateSigningRequests is set up at start).",
		Restarts: Replicas, value: func(c *CloudConfig) any { return c.Nodes.KubeletServing.ApproveCSRs }},
	{Path: "loadBalancer.pools", Note: "Adding the first pool or removing the last (whether LoadBalancer is offered at all) waits for a restart of the replicas.",
		Restarts: Replicas, value: func(c *CloudConfig) any { return len(c.LoadBalancer.Pools) > 0 }},
	{Path: "loadBalancer.class", Note: "Read at start: a change waits for a restart of the replicas and the node agents.",
		Restarts: Replicas | Agents, value: func(c *CloudConfig) any { return c.LoadBalancer.Class }},
	{Path: "loadBalancer.serveDefaultClass", Note: "Read at start, as class.",
		Restarts: Replicas | Agents, value: func(c *CloudConfig) any { return c.LoadBalancer.ServeDefaultClass }},
	{Path: "loadBalancer.pools[].addresses", Note: "Allocation, the replicas' BGP announcements and the node agents' follow a reload at once; a change that touches a pool announced with L2 restarts the node agents, and the replicas' L2 observer follows at their next restart.",
		Restarts: Agents, value: func(c *CloudConfig) any { return poolValues(c, func(p *Pool) (any, bool) { return p.Addresses, true }) }},
	{Path: "loadBalancer.pools[].announce", Note: "The replicas' and the node agents' BGP announcements follow a reload at once; a change to or from L2 restarts the node agents, and the replicas' L2 observer follows at their next restart.",
		Restarts: Agents, value: func(c *CloudConfig) any { return poolValues(c, func(p *Pool) (any, bool) { return p.Announce, true }) }},
	{Path: "loadBalancer.pools[].bgpAdvertisements", Note: "Applies at the next restart (the speakers read it at start).",
		Restarts: Replicas | Agents, value: func(c *CloudConfig) any {
			return poolValues(c, func(p *Pool) (any, bool) { return p.BGPAdvertisements, len(p.BGPAdvertisements) > 0 })
		}},
	{Path: "loadBalancer.pools[].serviceCommunities", Note: "Applies at the next restart (the speakers read it at start).",
		Restarts: Replicas | Agents, value: func(c *CloudConfig) any {
			return poolValues(c, func(p *Pool) (any, bool) { return p.ServiceCommunities, len(p.ServiceCommunities) > 0 })
		}},
	{Path: "loadBalancer.pools[].weightedECMP", Note: "Applies at the next restart (the announcers read it at start).",
		Restarts: Replicas | Agents, value: func(c *CloudConfig) any {
			return poolValues(c, func(p *Pool) (any, bool) { return p.WeightedECMP, p.WeightedECMP })
		}},
	{Path: "bgp", Note: "Applies at the next restart of the replicas and the node agents, except onStop, which a replica reads when it stops.",
		Restarts: Replicas | Agents, value: func(c *CloudConfig) any { b := c.BGP; b.OnStop = ""; return b }},
	{Path: "routes", Note: "Applies at the next restart.",
		Restarts: Replicas | Agents, value: func(c *CloudConfig) any { return c.Routes }},
	{Path: "healthChecks", Note: "Applies at the next restart.",
		Restarts: Replicas, value: func(c *CloudConfig) any { return c.HealthChecks }},
	{Path: "l2", Note: "Applies at the next restart of the node agents and the replicas (the L2 observer), except failback, which only the node agents read.",
		Restarts: Replicas | Agents, value: func(c *CloudConfig) any { l := c.L2; l.Failback = ""; return l }},
	{Path: "l2.failback", Note: "Applies at the next restart of the node agents.",
		Restarts: Agents, value: func(c *CloudConfig) any { return c.L2.Failback }},
}

// ChangedAtRestart are the RestartFields whose value differs between the
// running config and a reloaded one.
func ChangedAtRestart(old, updated *CloudConfig) []RestartField {
	var out []RestartField
	for _, f := range RestartFields {
		if !reflect.DeepEqual(f.value(old), f.value(updated)) {
			out = append(out, f)
		}
	}
	return out
}

// RestartsOf are the paths of changed whose change restarts role.
func RestartsOf(changed []RestartField, role Role) []string {
	var out []string
	for _, f := range changed {
		if f.Restarts&role != 0 {
			out = append(out, f.Path)
		}
	}
	return out
}

// poolValues is one field of the pools, by pool name, for the pools where
// field says it is set: a new pool without a routing policy changes no
// speaker's policy.
func poolValues(c *CloudConfig, field func(*Pool) (any, bool)) map[string]any {
	out := make(map[string]any, len(c.LoadBalancer.Pools))
	for i := range c.LoadBalancer.Pools {
		p := &c.LoadBalancer.Pools[i]
		if v, set := field(p); set {
			out[p.Name] = v
		}
	}
	return out
}

// AgentsApplyLive reports whether the node agents take updated without a
// restart: the only changes they read at start are the addresses or the
// protocols of pools none of which is announced with L2, before or after
// (an L2 pool decides the agents' interfaces, membership and NET_RAW, read
// at start). A BGP pool added, removed or changed is so. The pools'
// allocation and announcement then follow at once (the agents' announcers
// read the pools of the moment).
func AgentsApplyLive(old, updated *CloudConfig) bool {
	live := map[string]bool{"loadBalancer.pools[].addresses": true, "loadBalancer.pools[].announce": true}
	changed := RestartsOf(ChangedAtRestart(old, updated), Agents)
	for _, path := range changed {
		if !live[path] {
			return false
		}
	}
	return len(changed) > 0 && reflect.DeepEqual(l2Pools(old), l2Pools(updated))
}

// l2Pools are the addresses of the pools announced with L2, by name.
func l2Pools(c *CloudConfig) map[string]any {
	return poolValues(c, func(p *Pool) (any, bool) { return p.Addresses, p.Announces(ProtocolL2) })
}
