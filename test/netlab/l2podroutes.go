package netlab

import (
	"fmt"
	"net/netip"
)

// RoutePodCIDRs routes, in every node namespace, each other node's pod
// CIDRs via that node's address on the segment: what a flat network
// without a router or an overlay needs, for pods to reach the pods of
// other nodes and for kube-proxy to forward a LoadBalancer connection to a
// pod on another node. cidrs[i] are node i's pod CIDRs (a node without an
// entry has none). Routes already there are replaced, so a second call
// with the same CIDRs changes nothing.
func (l *L2Lab) RoutePodCIDRs(cidrs [][]netip.Prefix) error {
	if len(cidrs) > len(l.Nodes) {
		return fmt.Errorf("netlab L2: pod CIDRs of %d nodes, the lab has %d", len(cidrs), len(l.Nodes))
	}
	for j, ns := range l.Nodes {
		for i, own := range cidrs {
			if i == j {
				continue
			}
			for _, p := range own {
				via := L2NodeAddr(FamilyOf(p.Addr()), i)
				if err := ipn(ns, "route", "replace", p.Masked().String(), "via", via.String()); err != nil {
					return fmt.Errorf("netlab L2: route node %d's pod CIDR %s in node %d: %w", i, p, j, err)
				}
			}
		}
	}
	return nil
}
