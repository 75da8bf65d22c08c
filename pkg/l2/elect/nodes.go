package elect

import (
	"net/netip"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/metal-ccm/metal-ccm/pkg/l2/member"
	"github.com/metal-ccm/metal-ccm/pkg/nodes"
)

// agentNode is what the L2 rules read of one node.
type agentNode struct {
	rv string // the node's resourceVersion
	// selected: l2.nodeSelector picks it, so an agent runs there (Seeds).
	selected bool
	// counts: selected, Ready and not being deleted (ExpectedAgents).
	counts bool
	addrs  []netip.Addr // its InternalIPs
	seed   netip.Addr   // its primary InternalIP; invalid if none
}

func agentNodeOf(n *v1.Node, selects func(labels.Set) bool) agentNode {
	e := agentNode{rv: n.ResourceVersion, selected: selects(labels.Set(n.Labels))}
	if !e.selected {
		return e
	}
	e.counts = nodes.All(n, nodes.Ready, nodes.NotDeleting)
	e.addrs = nodes.InternalIPs(n)
	e.seed, _ = nodes.PrimaryInternalIP(n)
	return e
}

func (e agentNode) same(o agentNode) bool {
	return e.selected == o.selected && e.counts == o.counts && e.seed == o.seed && slices.Equal(e.addrs, o.addrs)
}

func agentNodes(list []*v1.Node, selects func(labels.Set) bool) map[string]agentNode {
	out := make(map[string]agentNode, len(list))
	for _, n := range list {
		out[n.Name] = agentNodeOf(n, selects)
	}
	return out
}

// ExpectedAgents are the nodes whose agents count towards the majority:
// those l2.nodeSelector selects, Ready and not being deleted. They come from
// the API server, not from the membership, so that the count does not
// shrink when agents die silently (the membership forgets dead members
// after a while, which would let a lone agent be a majority of one); a node
// that is down long enough for the node controller to mark it not Ready
// stops counting, so a cluster that loses nodes for good still has a
// majority among those left.
func ExpectedAgents(list []*v1.Node, selects func(labels.Set) bool) map[string][]netip.Addr {
	return expectedFrom(agentNodes(list, selects))
}

func expectedFrom(byName map[string]agentNode) map[string][]netip.Addr {
	out := map[string][]netip.Addr{}
	for name, e := range byName {
		if e.counts {
			out[name] = e.addrs
		}
	}
	return out
}

// Seeds are where to join the expected agents a view does not show alive:
// the primary InternalIP (IPv4, else IPv6) of each node selects picks, at
// port, except the addresses of self. Joining through them finds a new
// node's agent, and both sides of a healed partition, without a fixed seed
// list.
func Seeds(list []*v1.Node, alive []member.Member, selects func(labels.Set) bool, port uint16, self []netip.Addr) []netip.AddrPort {
	return seedsFrom(agentNodes(list, selects), alive, port, self)
}

func seedsFrom(byName map[string]agentNode, alive []member.Member, port uint16, self []netip.Addr) []netip.AddrPort {
	seen := map[string]bool{}
	for _, m := range alive {
		seen[m.Name] = true
	}
	var out []netip.AddrPort
	for name, e := range byName {
		if seen[name] || !e.selected || !e.seed.IsValid() || slices.Contains(self, e.seed) {
			continue
		}
		out = append(out, netip.AddrPortFrom(e.seed, port))
	}
	slices.SortFunc(out, netip.AddrPort.Compare)
	return out
}

// nodeCache keeps each node's agentNode by its resourceVersion: a round
// lists the nodes every Recheck, and matching 5,000 of them against
// l2.nodeSelector and reading their addresses every second cost as much
// as the rest of the round.
type nodeCache struct {
	byName   map[string]agentNode
	expected map[string][]netip.Addr // expectedFrom(byName): replaced, never modified
}

// refresh brings the cache to list and reports whether what the rules read
// changed (a node's resourceVersion alone does not count).
func (c *nodeCache) refresh(list []*v1.Node, selects func(labels.Set) bool) bool {
	changed := c.byName == nil
	if changed {
		c.byName = make(map[string]agentNode, len(list))
	}
	for _, n := range list {
		old, ok := c.byName[n.Name]
		if ok && old.rv != "" && old.rv == n.ResourceVersion {
			continue
		}
		e := agentNodeOf(n, selects)
		if !ok || !e.same(old) {
			changed = true
		}
		c.byName[n.Name] = e
	}
	if len(c.byName) != len(list) {
		// Some are gone: every listed node is in the map, so the extra ones
		// are those not listed.
		listed := make(map[string]bool, len(list))
		for _, n := range list {
			listed[n.Name] = true
		}
		for name := range c.byName {
			if !listed[name] {
				delete(c.byName, name)
				changed = true
			}
		}
	}
	if changed || c.expected == nil {
		c.expected = expectedFrom(c.byName)
	}
	return changed
}
