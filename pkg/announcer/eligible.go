package announcer

import (
	"net/netip"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/metal-ccm/metal-ccm/pkg/nodes"
)

type nodeHops struct{ v4, v6 netip.Addr }

// ExcludeLabel keeps a node out of every announcement unless its value
// parses as false, as upstream reads it (nodes.Included).
const ExcludeLabel = nodes.ExcludeLabel

func (a *Announcer) eligibleNodes() map[string]nodeHops {
	list, err := a.nodes.List(labels.Everything())
	if err != nil {
		return map[string]nodeHops{}
	}
	out := map[string]nodeHops{}
	for _, n := range list {
		if !a.announcesFor(n.Name) {
			continue
		}
		if h := hopsOf(n); h.v4.IsValid() || h.v6.IsValid() {
			out[n.Name] = h
		}
	}
	return out
}

// hopsOf returns the next hops a node offers, its first InternalIP of each
// family: none unless it carries load-balancer traffic (Ready, initialized,
// not being deleted, not excluded, not about to be deleted by the cluster
// autoscaler; see nodes.CarriesLoadBalancerTraffic).
func hopsOf(n *v1.Node) nodeHops {
	if !nodes.CarriesLoadBalancerTraffic(n) {
		return nodeHops{}
	}
	var h nodeHops
	for _, addr := range n.Status.Addresses {
		if addr.Type != v1.NodeInternalIP {
			continue
		}
		ip, err := netip.ParseAddr(addr.Address)
		if err != nil {
			continue
		}
		ip = ip.Unmap()
		if ip.Is4() && !h.v4.IsValid() {
			h.v4 = ip
		} else if ip.Is6() && !h.v6.IsValid() {
			h.v6 = ip
		}
	}
	return h
}

// hopLists returns the nodes' IPv4 and IPv6 next hops, each sorted.
func hopLists(nodes map[string]nodeHops) (v4, v6 []netip.Addr) {
	for _, n := range nodes {
		if n.v4.IsValid() {
			v4 = append(v4, n.v4)
		}
		if n.v6.IsValid() {
			v6 = append(v6, n.v6)
		}
	}
	slices.SortFunc(v4, netip.Addr.Compare)
	slices.SortFunc(v6, netip.Addr.Compare)
	return slices.Compact(v4), slices.Compact(v6)
}

// announcesFor reports whether this announcer announces for the node: every
// node in a replica, its own node in a node agent (Options.OnlyNode).
func (a *Announcer) announcesFor(node string) bool {
	return a.opts.OnlyNode == "" || node == a.opts.OnlyNode
}
