package announcer

import (
	"net/netip"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// syncPodRoutes recomputes the pod routes of every node, and removes those
// of nodes that have gone.
func (a *Announcer) syncPodRoutes(touched map[netip.Prefix]bool) {
	names := map[string]bool{}
	for _, name := range a.table.keys(fromPodRoute) {
		names[name] = true
	}
	if list, err := a.nodes.List(labels.Everything()); err == nil {
		for _, n := range list {
			if a.announcesFor(n.Name) {
				names[n.Name] = true
			}
		}
	}
	for name := range names {
		a.table.set(owner{fromPodRoute, name}, a.podRoutes(name), touched)
	}
}

// recordPodRoutes notes which nodes' pod routes the backend has, for
// NodeRoutes.
func (a *Announcer) recordPodRoutes() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.podApplied = map[string]map[netip.Prefix]netip.Addr{}
	for o, c := range a.table.contrib {
		if o.source != fromPodRoute {
			continue
		}
		for p, hops := range c {
			if len(hops) == 1 && slices.Contains(a.table.applied[p], hops[0]) {
				if a.podApplied[o.key] == nil {
					a.podApplied[o.key] = map[netip.Prefix]netip.Addr{}
				}
				a.podApplied[o.key][p] = hops[0]
			}
		}
	}
}

// podRoutes are a node's pod CIDRs, each with the node's address of the
// configured type and the CIDR's family as next hop. A node being deleted, or
// without such an address, has none. Readiness does not matter: pods of a
// NotReady node may still run.
func (a *Announcer) podRoutes(name string) map[netip.Prefix][]netip.Addr {
	n, err := a.nodes.Get(name)
	if err != nil || n.DeletionTimestamp != nil {
		return nil
	}
	out := map[netip.Prefix][]netip.Addr{}
	for _, c := range n.Spec.PodCIDRs {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			continue
		}
		if hop, ok := a.nodeAddress(n, p.Addr().Is4()); ok {
			out[p.Masked()] = []netip.Addr{hop}
		}
	}
	return out
}

func (a *Announcer) nodeAddress(n *v1.Node, v4 bool) (netip.Addr, bool) {
	for _, addr := range n.Status.Addresses {
		if addr.Type != a.opts.PodNextHop {
			continue
		}
		ip, err := netip.ParseAddr(addr.Address)
		if err == nil && ip.Unmap().Is4() == v4 {
			return ip.Unmap(), true
		}
	}
	return netip.Addr{}, false
}

func podRoutesEqual(a, b *v1.Node) bool {
	return slices.Equal(a.Spec.PodCIDRs, b.Spec.PodCIDRs) && slices.Equal(a.Status.Addresses, b.Status.Addresses) &&
		(a.DeletionTimestamp == nil) == (b.DeletionTimestamp == nil)
}

// NodeRoute is a pod CIDR announced for a node.
type NodeRoute struct {
	Node    string
	CIDR    netip.Prefix
	NextHop netip.Addr
}

// NodeRoutes lists the pod routes the speaker was told about.
func (a *Announcer) NodeRoutes() []NodeRoute {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []NodeRoute
	for node, routes := range a.podApplied {
		for p, hop := range routes {
			out = append(out, NodeRoute{Node: node, CIDR: p, NextHop: hop})
		}
	}
	return out
}

// NextHopFor returns the next hop a node's pod CIDR of that family would get,
// and false when the node has no address to use.
func (a *Announcer) NextHopFor(node string, v4 bool) (netip.Addr, bool) {
	n, err := a.nodes.Get(node)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.nodeAddress(n, v4)
}
