package bgp

import (
	"context"
	"fmt"
	"maps"
	"net/netip"

	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
	"github.com/osrg/gobgp/v4/pkg/server"
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/community"
)

// SetWeights makes weights the ready endpoints behind each next hop of host
// prefix (weighted ECMP): each path whose next hop has some carries a link
// bandwidth community in proportion (community.ForEndpoints), so that a
// router that honours it spreads the prefix's traffic over its next hops by
// endpoints, not evenly. None (nil) sends the paths without. The paths whose
// weight changed are sent again (a path added again with its identifier
// replaces the one GoBGP has), the others are left alone (also one that
// weights leave out: see below), and a failed call leaves the weights as
// they were for the caller's retry; weights of next
// hops the prefix has no path to wait for SetPaths. The speaker may keep
// weights: the caller must not modify it afterwards.
func (s *Speaker) SetWeights(ctx context.Context, prefix netip.Prefix, weights map[netip.Addr]int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	before := s.weights[prefix]
	if maps.Equal(before, weights) {
		return nil
	}
	if len(weights) == 0 {
		delete(s.weights, prefix)
	} else {
		s.weights[prefix] = weights
	}
	var changed hopPaths
	for _, h := range s.paths[prefix].paths() {
		if resend(before, weights, h.hop) {
			changed = append(changed, h)
		}
	}
	if len(changed) == 0 {
		return nil
	}
	klog.FromContext(ctx).V(2).Info("BGP path weights changed", "prefix", prefix, "endpoints", weights, "paths", len(changed))
	err := s.eachHostServer(prefix, func(srv *server.BgpServer, attrs Attributes) error {
		return addPaths(srv, prefix, changed, attrs)
	})
	if err != nil {
		// Kept as before, so that the caller's retry sends them again.
		if len(before) == 0 {
			delete(s.weights, prefix)
		} else {
			s.weights[prefix] = before
		}
		return fmt.Errorf("bgp set weights: %w", err)
	}
	return nil
}

// resend reports whether the path to hop goes out again when its prefix's
// weights change from before to after: when its weight changed, except for
// a next hop that non-empty weights leave out. That one is leaving: its
// path keeps its community until SetPaths withdraws it, so that the router
// never sees, for a moment, a path without one (FRR then spreads the whole
// prefix evenly).
func resend(before, after map[netip.Addr]int, hop netip.Addr) bool {
	w := after[hop]
	return before[hop] != w && (w > 0 || len(after) == 0)
}

// linkBandwidth is the link bandwidth community of the path to hop, when
// its prefix has weights and hop has endpoints.
func (a Attributes) linkBandwidth(hop netip.Addr) (bgp.PathAttributeInterface, bool) {
	n := a.weights[hop]
	if n <= 0 {
		return nil, false
	}
	b := community.ForEndpoints(a.asn, n).Bytes()
	ec, err := bgp.ParseExtended(b[:])
	if err != nil {
		// Only if GoBGP stopped reading the community it sends.
		return nil, false
	}
	return bgp.NewPathAttributeExtendedCommunities([]bgp.ExtendedCommunityInterface{ec}), true
}
