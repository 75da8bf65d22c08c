package announcer

import (
	"context"
	"net/netip"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/community"
)

// Only is next for the prefixes keep accepts, and withdraws the others from
// it: one announcement protocol's share of what an announcer decides (a
// pool announced with L2 alone must not reach the BGP speaker, and the other
// way round).
func Only(next Backend, keep func(netip.Prefix) bool) Backend {
	return only{next, keep}
}

type only struct {
	next Backend
	keep func(netip.Prefix) bool
}

func (o only) SetPaths(ctx context.Context, prefix netip.Prefix, nextHops []netip.Addr) error {
	if !o.keep(prefix) {
		nextHops = nil
	}
	return o.next.SetPaths(ctx, prefix, nextHops)
}

// SetCommunities passes the communities of the prefixes keep accepts on to
// next, when next takes communities.
func (o only) SetCommunities(ctx context.Context, prefix netip.Prefix, c community.Set) error {
	cb, ok := o.next.(CommunityBackend)
	if !ok || !o.keep(prefix) {
		return nil
	}
	return cb.SetCommunities(ctx, prefix, c)
}
