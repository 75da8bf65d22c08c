package bgp

import (
	"net/netip"
	"slices"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/community"
)

// Attributes are what a path carries besides its prefix and next hop.
type Attributes struct {
	// Communities are its standard and large communities.
	Communities community.Set
	// LocalPref is its LOCAL_PREF to iBGP peers; 0 sends the default, 100.
	// It is never sent to eBGP peers (RFC 4271 5.1.5).
	LocalPref uint32

	// weights and asn, set by the speaker for a host prefix with
	// SetWeights, give each path its link bandwidth community.
	weights map[netip.Addr]int
	asn     uint32
	// nextHopSelf, set by the speaker for a peer with Peer.NextHopSelf,
	// sends the paths with the session's own address as next hop.
	nextHopSelf bool
}

// Advertisement is how some host prefixes go to some peers.
type Advertisement struct {
	// Peers are the names (Peer.Name) of the peers that get them this way.
	Peers []string
	// Attributes are what their paths carry.
	Attributes Attributes
	// Aggregate4 and Aggregate6, when not 0, also announce the prefix of
	// that length covering each IPv4 (IPv6) host prefix, with the union of
	// the next hops of the host prefixes it covers and Attributes (not the
	// Services' own communities: an aggregate covers many Services).
	Aggregate4, Aggregate6 int
	// AggregateOnly announces the aggregate instead of the host prefixes,
	// for the families that have an aggregate length.
	AggregateOnly bool
}

// aggregateLen is the aggregate length of prefix's family, or 0.
func (a *Advertisement) aggregateLen(prefix netip.Prefix) int {
	if prefix.Addr().Is4() {
		return a.Aggregate4
	}
	return a.Aggregate6
}

// Policy says how each host prefix goes to the peers.
type Policy interface {
	// Advertisements are the ways prefix goes out; none (nil) is the
	// default: to every peer, as a host route, without attributes. A peer
	// that none of them names is not sent prefix.
	Advertisements(prefix netip.Prefix) []Advertisement
}

// defaultAdvertisement is how a prefix goes out without a policy.
var defaultAdvertisement = &Advertisement{}

// advertisementFor is how prefix goes to peer i: nil when it does not.
// The family and Deny filters of the peer apply first.
func (s *Speaker) advertisementFor(i int, prefix netip.Prefix) *Advertisement {
	p := &s.cfg.Peers[i]
	if !p.carries(prefix) {
		return nil
	}
	if s.cfg.Policy == nil {
		return defaultAdvertisement
	}
	ads := s.cfg.Policy.Advertisements(prefix)
	if ads == nil {
		return defaultAdvertisement
	}
	for k := range ads {
		if slices.Contains(ads[k].Peers, p.Name) {
			return &ads[k]
		}
	}
	return nil
}

// SentTo are the names of the peers the policy sends prefix to, as a host
// route or within an aggregate, whatever the state of their sessions.
func (s *Speaker) SentTo(prefix netip.Prefix) []string {
	var out []string
	for i := range s.cfg.Peers {
		if s.advertisementFor(i, prefix) != nil {
			out = append(out, s.cfg.Peers[i].Name)
		}
	}
	return out
}

// hostAttrs are the attributes of prefix's host-route paths to peer i, and
// whether peer i gets them at all.
func (s *Speaker) hostAttrs(i int, prefix netip.Prefix) (Attributes, bool) {
	ad := s.advertisementFor(i, prefix)
	if ad == nil || (ad.AggregateOnly && ad.aggregateLen(prefix) > 0) {
		return Attributes{}, false
	}
	attrs := ad.Attributes
	attrs.Communities = attrs.Communities.Union(s.extra[prefix])
	attrs.weights, attrs.asn = s.weights[prefix], s.cfg.ASN
	attrs.nextHopSelf = s.cfg.Peers[i].NextHopSelf
	return attrs, true
}
