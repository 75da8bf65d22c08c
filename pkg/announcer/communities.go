package announcer

import (
	"context"
	"net/netip"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/community"
)

// CommunityBackend is a Backend whose paths also carry the communities the
// Services of a prefix add to it (BGP). The announcer sends a prefix's
// communities before its next hops, so that new paths go out with them.
type CommunityBackend interface {
	Backend
	SetCommunities(ctx context.Context, prefix netip.Prefix, c community.Set) error
}

// newCommunityTable is the table of the communities each Service adds to
// its prefixes: a prefix gets the union of its Services'.
func newCommunityTable(backend CommunityBackend) *prefixValues[community.Set] {
	return newPrefixValues("communities", community.Set.Union, community.Set.Equal, community.Set.Empty, backend.SetCommunities)
}
