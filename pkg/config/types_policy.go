package config

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/community"
)

// BGPAdvertisement is one way a pool's addresses go out over BGP: to some
// peers, with some attributes.
type BGPAdvertisement struct {
	// Peers names the peers (bgp.peers[].name) that get the pool this way.
	// At most one of peers and peerSelector. Default (neither): every peer.
	Peers []string `json:"peers,omitempty"`
	// PeerSelector picks the peers by their labels (bgp.peers[].labels).
	PeerSelector *metav1.LabelSelector `json:"peerSelector,omitempty"`
	// Communities are standard communities ("65000:100") or well-known
	// names ("no-export", "blackhole", ...) the paths carry. Default: none.
	Communities []string `json:"communities,omitempty"`
	// LargeCommunities are large communities ("64512:1:2") the paths carry.
	// Default: none.
	LargeCommunities []string `json:"largeCommunities,omitempty"`
	// LocalPreference is the LOCAL_PREF of the paths, for iBGP peers only
	// (peers whose asn is bgp.asn): refused with an eBGP peer. Default:
	// none (the router's default, usually 100).
	LocalPreference *uint32 `json:"localPreference,omitempty"`
	// Aggregate also (or, with only, instead) announces the prefix of the
	// given length that covers each address, with the union of the next
	// hops of the addresses it covers. Default: none.
	Aggregate *Aggregate `json:"aggregate,omitempty"`

	peers       []string      // the names of the peers it selects, in bgp.peers order: set by validation
	communities community.Set // Communities and LargeCommunities, parsed by validation
}

// Aggregate is the covering prefix an advertisement announces.
type Aggregate struct {
	// IPv4Length is the length of the IPv4 aggregate, from 1 to 32.
	// Default: no IPv4 aggregate.
	IPv4Length *int `json:"ipv4Length,omitempty"`
	// IPv6Length is the length of the IPv6 aggregate, from 1 to 128.
	// Default: no IPv6 aggregate.
	IPv6Length *int `json:"ipv6Length,omitempty"`
	// Only announces the aggregate instead of the addresses themselves
	// (of the families that have a length). Default: false (both).
	Only bool `json:"only,omitempty"`
}
