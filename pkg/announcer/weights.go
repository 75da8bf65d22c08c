package announcer

import (
	"context"
	"maps"
	"net/netip"
	"slices"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// WeightBackend is a Backend whose paths can also carry the ready endpoints
// behind each next hop (weighted ECMP: BGP's link bandwidth community). The
// announcer sends a prefix's weights before its next hops, so that new paths
// go out with theirs.
type WeightBackend interface {
	Backend
	SetWeights(ctx context.Context, prefix netip.Prefix, weights map[netip.Addr]int) error
}

// hopWeights are the ready endpoints behind each next hop of a prefix.
type hopWeights = map[netip.Addr]int

// newWeightTable is the table of the endpoints behind each next hop of the
// weighted prefixes: two Services sharing an address add up.
func newWeightTable(backend WeightBackend) *prefixValues[hopWeights] {
	return newPrefixValues("path weights", addWeights, maps.Equal[hopWeights], func(w hopWeights) bool { return len(w) == 0 }, backend.SetWeights)
}

// addWeights is the sum of a and b, hop by hop.
func addWeights(a, b hopWeights) hopWeights {
	out := maps.Clone(a)
	if out == nil {
		out = hopWeights{}
	}
	for h, n := range b {
		out[h] += n
	}
	return out
}

// family is an address family's index in endpointCounts.
const (
	familyV4 = 0
	familyV6 = 1
)

// endpointCounts are the ready endpoints of svc on each node, for each
// address family (an endpoint of a dual-stack Service is in one slice of
// each), each endpoint counted once even while it is in two slices.
func (a *Announcer) endpointCounts(svc *v1.Service) [2]map[string]int {
	var out [2]map[string]int
	seen := map[string]bool{}
	for _, s := range a.slicesOf(svc) {
		f := familyV4
		switch s.AddressType {
		case discoveryv1.AddressTypeIPv4:
		case discoveryv1.AddressTypeIPv6:
			f = familyV6
		default:
			continue
		}
		for _, ep := range s.Endpoints {
			ready := ep.Conditions.Ready == nil || *ep.Conditions.Ready
			if !ready || ep.NodeName == nil || len(ep.Addresses) == 0 || seen[ep.Addresses[0]] {
				continue
			}
			seen[ep.Addresses[0]] = true
			if out[f] == nil {
				out[f] = map[string]int{}
			}
			out[f][*ep.NodeName]++
		}
	}
	return out
}

// weightsOf are the endpoints behind each of hops, the next hops of an
// address of family v4 (or IPv6), from the nodes that carry it and their
// endpoints: those of the address's family, else those of the other (a
// Service whose slices have only one family), else 1 (the node has a ready
// endpoint: it carries the address). Every hop gets a weight, so that a hop
// without one is a hop leaving (Speaker.SetWeights keeps its path as it is
// until SetPaths withdraws it).
func weightsOf(hops []netip.Addr, nodes map[string]nodeHops, counts [2]map[string]int, v4 bool) hopWeights {
	f := familyV6
	if v4 {
		f = familyV4
	}
	var out hopWeights
	for name, h := range nodes {
		hop := h.v6
		if v4 {
			hop = h.v4
		}
		if !hop.IsValid() {
			continue
		}
		if _, in := slices.BinarySearchFunc(hops, hop, netip.Addr.Compare); !in { // hops is sorted
			continue
		}
		n := counts[f][name]
		if n == 0 {
			n = max(counts[1-f][name], 1)
		}
		if out == nil {
			out = hopWeights{}
		}
		out[hop] = n
	}
	return out
}
