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
	name string
	// selected: l2.nodeSelector picks it, so an agent runs there (Seeds).
	selected bool
	// counts: selected, Ready and not being deleted (ExpectedAgents).
	counts bool
	addrs  []netip.Addr // its InternalIPs
	seed   netip.Addr   // its primary InternalIP; invalid if none
}

func agentNodeOf(n *v1.Node, selects func(labels.Set) bool) agentNode {
	e := agentNode{name: n.Name, selected: selects(labels.Set(n.Labels))}
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

func agentNodes(list []*v1.Node, selects func(labels.Set) bool) map[*v1.Node]agentNode {
	out := make(map[*v1.Node]agentNode, len(list))
	for _, n := range list {
		out[n] = agentNodeOf(n, selects)
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

func expectedFrom(byNode map[*v1.Node]agentNode) map[string][]netip.Addr {
	out := map[string][]netip.Addr{}
	for _, e := range byNode {
		if e.counts {
			out[e.name] = e.addrs
		}
	}
	return out
}

// seedsFrom are where to join the expected agents a view does not show
// alive: the primary InternalIP (IPv4, else IPv6) of each node
// l2.nodeSelector picks, at port, except the addresses of self. Joining
// through them finds a new node's agent, and both sides of a healed
// partition, without a fixed seed list.
func seedsFrom(byNode map[*v1.Node]agentNode, alive []member.Member, port uint16, self []netip.Addr) []netip.AddrPort {
	seen := map[string]bool{}
	for _, m := range alive {
		seen[m.Name] = true
	}
	var out []netip.AddrPort
	for _, e := range byNode {
		if seen[e.name] || !e.selected || !e.seed.IsValid() || slices.Contains(self, e.seed) {
			continue
		}
		out = append(out, netip.AddrPortFrom(e.seed, port))
	}
	slices.SortFunc(out, netip.AddrPort.Compare)
	return out
}

// nodeCache keeps each node's agentNode by the node's object: the
// informer replaces a node's object when it changes, so a listed object
// already in the cache is unchanged. A round lists the nodes every Recheck,
// and matching 5,000 of them against l2.nodeSelector and reading their
// addresses every second cost as much as the rest of the round.
type nodeCache struct {
	byNode   map[*v1.Node]agentNode
	expected map[string][]netip.Addr // expectedFrom(byNode): replaced, never modified
}

// refresh brings the cache to list and reports whether what the rules read
// changed (a new object for a node that says the same does not count).
func (c *nodeCache) refresh(list []*v1.Node, selects func(labels.Set) bool) bool {
	if c.byNode != nil && len(list) == len(c.byNode) && !slices.ContainsFunc(list, func(n *v1.Node) bool {
		_, ok := c.byNode[n]
		return !ok
	}) {
		return false
	}
	old := make(map[string]agentNode, len(c.byNode))
	for _, e := range c.byNode {
		old[e.name] = e
	}
	changed := c.byNode == nil || len(old) != len(list)
	next := make(map[*v1.Node]agentNode, len(list))
	for _, n := range list {
		e, ok := c.byNode[n]
		if !ok {
			e = agentNodeOf(n, selects)
			if was, had := old[n.Name]; !had || !e.same(was) {
				changed = true
			}
		}
		next[n] = e
	}
	c.byNode = next
	if changed || c.expected == nil {
		c.expected = expectedFrom(next)
	}
	return changed
}
