package bgp

import (
	"context"
	"maps"
	"net/netip"

	"k8s.io/klog/v2"
)

// SetWeights makes weights the ready endpoints behind each next hop of host
// prefix (weighted ECMP): each path whose next hop has some carries a link
// bandwidth community in proportion (community.ForEndpoints), so that a
// router that honours it spreads the prefix's traffic over its next hops by
// endpoints, not evenly. None (nil) sends the paths without. The paths whose
// weight changed are sent again (a path sent again with its identifier
// replaces the one the router has; the peers' senders send every path of
// the prefix again), and a next hop the new weights leave out keeps its
// weight until its path is withdrawn (see resend); weights of next
// hops the prefix has no path to wait for SetPaths. The speaker may keep
// weights: the caller must not modify it afterwards.
func (s *Speaker) SetWeights(ctx context.Context, prefix netip.Prefix, weights map[netip.Addr]int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	before := s.weights[prefix]
	// A path that resend leaves alone although its weight changed (its
	// next hop is leaving) keeps its weight until SetPaths withdraws it.
	stored, cloned := weights, false
	for _, h := range s.paths[prefix].hops {
		if !resend(before, weights, h) && before[h] != weights[h] {
			if !cloned {
				stored, cloned = maps.Clone(weights), true
			}
			stored[h] = before[h]
		}
	}
	if maps.Equal(before, stored) {
		return nil
	}
	if len(stored) == 0 {
		delete(s.weights, prefix)
	} else {
		s.weights[prefix] = stored
	}
	changed := 0
	for _, h := range s.paths[prefix].hops {
		if before[h] != stored[h] {
			changed++
		}
	}
	if changed == 0 {
		return nil
	}
	klog.FromContext(ctx).V(2).Info("BGP path weights changed", "prefix", prefix, "endpoints", weights, "paths", changed)
	s.gens[prefix]++
	s.mark(prefix)
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
