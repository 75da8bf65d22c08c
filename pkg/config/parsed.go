package config

import (
	"net/netip"
	"slices"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/community"
	"github.com/metal-ccm/metal-ccm/pkg/ipam"
	"github.com/metal-ccm/metal-ccm/pkg/lbrule"
)

// The values below are parsed once, by the validation of a document
// (Parse): a config that Parse returned has them all, and its users take
// them as they are instead of parsing the strings again.

// Ranges are the pool's addresses.
func (p *Pool) Ranges() []ipam.Range { return slices.Clone(p.ranges) }

// Selector is the pool's compiled serviceSelector, labels.Everything() when
// it has none.
func (p *Pool) Selector() labels.Selector {
	if p.selector == nil {
		return labels.Everything()
	}
	return p.selector
}

// RouterIDAddr is bgp.routerID; invalid when unset (derived at start).
func (b *BGP) RouterIDAddr() netip.Addr { return b.routerID }

// Addr is the peer's address.
func (p *BGPPeer) Addr() netip.Addr { return p.address }

// Selects reports whether the peer's nodeSelector matches node labels
// (every node when it has none).
func (p *BGPPeer) Selects(nodeLabels labels.Set) bool {
	return p.nodeSelector == nil || p.nodeSelector.Matches(nodeLabels)
}

// LinkLocalAddr is the router's link-local address on the peer's
// interface; invalid when unset (found on the link).
func (p *BGPPeer) LinkLocalAddr() netip.Addr { return p.linkLocalAddress }

// LocalAddr is the session's source address; invalid when unset.
func (p *BGPPeer) LocalAddr() netip.Addr { return p.localAddress }

// ClusterPrefixes are routes.clusterCIDRs.
func (r *Routes) ClusterPrefixes() []netip.Prefix { return slices.Clone(r.clusterCIDRs) }

// Prefix is the rule's subnet.
func (r *TopologyRule) Prefix() netip.Prefix { return r.subnet }

// Announces reports whether addr is made reachable with proto: only if a
// pool holds it and announces with proto. An address in no pool is
// announced by no protocol, whoever wrote it into a Service's status: the
// pools are the bound of what the cluster makes reachable.
func (lb *LoadBalancer) Announces(addr netip.Addr, proto Protocol) bool {
	p := lb.PoolOf(addr)
	return p != nil && p.Announces(proto)
}

// Announcer is Announces for one protocol, as the announcers take it
// (announcer.Options.Addresses).
func (lb *LoadBalancer) Announcer(proto Protocol) func(netip.Addr) bool {
	return func(addr netip.Addr) bool { return lb.Announces(addr, proto) }
}

// PoolsOverlap reports whether a pool announced with proto has an address
// in prefix (an L2 agent's segments worth telling the others of).
func (lb *LoadBalancer) PoolsOverlap(prefix netip.Prefix, proto Protocol) bool {
	pr := ipam.PrefixRange(prefix.Masked())
	for i := range lb.Pools {
		if lb.Pools[i].Announces(proto) && slices.ContainsFunc(lb.Pools[i].ranges, pr.Overlaps) {
			return true
		}
	}
	return false
}

// Rule is the rule of which Services are served: class and
// serveDefaultClass. Every part that serves Services (the service
// controller, the allocator, the announcers of the replicas and of the node
// agents) takes it from here, so that they agree.
func (lb *LoadBalancer) Rule() lbrule.Rule {
	return lbrule.Rule{Class: lb.Class, ServeDefault: lb.ServeDefaultClass}
}

// HasProtocol reports whether any pool is announced with proto.
func (lb *LoadBalancer) HasProtocol(proto Protocol) bool {
	for i := range lb.Pools {
		if lb.Pools[i].Announces(proto) {
			return true
		}
	}
	return false
}

// PeerName is the peer's name: bgp.peers[].name, or its address as written.
func (p *BGPPeer) PeerName() string { return p.name }

// PeerNames are the names of the peers the advertisement sends the pool
// to, in the order of bgp.peers.
func (a *BGPAdvertisement) PeerNames() []string { return slices.Clone(a.peers) }

// CommunitySet is the advertisement's communities and large communities.
func (a *BGPAdvertisement) CommunitySet() community.Set { return a.communities }

// AllowedServiceCommunities are the communities a Service of the pool may
// add (serviceCommunities).
func (p *Pool) AllowedServiceCommunities() community.Set { return p.serviceCommunities }

// PoolOf is the pool holding addr, or nil.
func (lb *LoadBalancer) PoolOf(addr netip.Addr) *Pool {
	addr = addr.Unmap()
	for i := range lb.Pools {
		for _, r := range lb.Pools[i].ranges {
			if r.Contains(addr) {
				return &lb.Pools[i]
			}
		}
	}
	return nil
}

// FromNodes reports whether the node agents announce over BGP: peers, with
// announceFrom Nodes.
func (b *BGP) FromNodes() bool { return len(b.Peers) > 0 && b.AnnounceFrom == AnnounceFromNodes }

// FromReplicas reports whether the replicas announce over BGP: peers, with
// announceFrom Replicas.
func (b *BGP) FromReplicas() bool { return len(b.Peers) > 0 && b.AnnounceFrom != AnnounceFromNodes }

// InPools reports whether addr is in some pool, whatever its protocols.
func (lb *LoadBalancer) InPools(addr netip.Addr) bool { return lb.PoolOf(addr) != nil }

// HasInterfacePeer reports whether a peer is on an interface (a link-local
// session): its speaker announces itself on that link, which takes
// CAP_NET_RAW.
func (b *BGP) HasInterfacePeer() bool {
	return slices.ContainsFunc(b.Peers, func(p BGPPeer) bool { return p.Interface != "" })
}
