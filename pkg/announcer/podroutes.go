package announcer

import (
	"context"
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
		for _, ph := range c {
			if len(ph.hops) == 1 && slices.Contains(a.table.applied[ph.prefix], ph.hops[0]) {
				if a.podApplied[o.key] == nil {
					a.podApplied[o.key] = map[netip.Prefix]netip.Addr{}
				}
				a.podApplied[o.key][ph.prefix] = ph.hops[0]
			}
		}
	}
}

// podRoutes are a node's pod routes (PodRoutesOf) as the table keeps them.
func (a *Announcer) podRoutes(name string) contribution {
	n, err := a.nodes.Get(name)
	if err != nil {
		return nil
	}
	var out contribution
	for p, hop := range PodRoutesOf(n, a.opts.PodNextHop) {
		out = out.with(p, []netip.Addr{hop})
	}
	return out
}

// PodRoutesOf are a node's pod CIDRs, each with its next hop: the node's
// address of type hopType and of the CIDR's family. A node being deleted has
// none, and a CIDR without such an address is left out. Readiness does not
// matter: pods of a NotReady node may still run. The replicas' announcer
// and the CCM's view of what the node agents announce both use it.
func PodRoutesOf(n *v1.Node, hopType v1.NodeAddressType) map[netip.Prefix]netip.Addr {
	if n.DeletionTimestamp != nil {
		return nil
	}
	out := map[netip.Prefix]netip.Addr{}
	for _, c := range n.Spec.PodCIDRs {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			continue
		}
		if hop, ok := NodeAddress(n, hopType, p.Addr().Is4()); ok {
			out[p.Masked()] = hop
		}
	}
	return out
}

// NodeAddress is the node's first address of type hopType and of a family.
func NodeAddress(n *v1.Node, hopType v1.NodeAddressType, v4 bool) (netip.Addr, bool) {
	for _, addr := range n.Status.Addresses {
		if addr.Type != hopType {
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
	return NodeAddress(n, a.opts.PodNextHop, v4)
}

// Synced reports whether the announcer has applied what its caches showed
// once they had synced.
func (a *Announcer) Synced() bool {
	select {
	case <-a.firstSync:
		return true
	default:
		return false
	}
}

// WaitSynced waits until Synced or ctx ends, and reports which.
func (a *Announcer) WaitSynced(ctx context.Context) bool {
	select {
	case <-a.firstSync:
		return true
	case <-ctx.Done():
		return false
	}
}

// MissingPodRoutes lists the pod CIDRs of a node that it should have
// announced (those with a next hop) and the backend does not have yet.
func (a *Announcer) MissingPodRoutes(node string) []netip.Prefix {
	want := a.podRoutes(node)
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []netip.Prefix
	for _, ph := range want {
		if _, ok := a.podApplied[node][ph.prefix]; !ok {
			out = append(out, ph.prefix)
		}
	}
	slices.SortFunc(out, func(x, y netip.Prefix) int { return x.Addr().Compare(y.Addr()) })
	return out
}
