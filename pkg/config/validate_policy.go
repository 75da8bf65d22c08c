package config

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/community"
	"github.com/metal-ccm/metal-ccm/pkg/ipam"
)

// validatePeerNames gives each peer its name (the address when it has
// none) and checks names and labels.
func (b *BGP) validatePeerNames(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]int{}
	for i := range b.Peers {
		peer := &b.Peers[i]
		pp := p.Child("peers").Index(i)
		peer.name = peer.Name
		if peer.Name == "" {
			peer.name = peer.Address
			switch {
			case peer.Interface != "":
				peer.name = peer.Interface
			case peer.DefaultGateway != "":
				peer.name = "default-gateway-" + strings.ToLower(string(peer.DefaultGateway))
			}
		} else {
			for _, msg := range validation.IsDNS1123Label(peer.Name) {
				errs = append(errs, field.Invalid(pp.Child("name"), peer.Name, msg))
			}
		}
		if j, dup := seen[peer.name]; dup {
			errs = append(errs, field.Duplicate(pp.Child("name"), fmt.Sprintf("%s (also peers[%d])", peer.name, j)))
		} else {
			seen[peer.name] = i
		}
		errs = append(errs, metav1validation.ValidateLabels(peer.Labels, pp.Child("labels"))...)
	}
	return errs
}

// validatePolicy checks each pool's BGP advertisements and Service
// communities against the peers (named and labelled by validatePeerNames),
// and keeps what it parsed.
func (lb *LoadBalancer) validatePolicy(p *field.Path, b *BGP) field.ErrorList {
	var errs field.ErrorList
	for i := range lb.Pools {
		pool := &lb.Pools[i]
		pp := p.Child("pools").Index(i)
		bgp := pool.Announces(ProtocolBGP)
		if len(pool.BGPAdvertisements) > 0 && !bgp {
			errs = append(errs, field.Invalid(pp.Child("bgpAdvertisements"), len(pool.BGPAdvertisements), "the pool is not announced with BGP"))
		}
		if len(pool.ServiceCommunities) > 0 && !bgp {
			errs = append(errs, field.Invalid(pp.Child("serviceCommunities"), pool.ServiceCommunities, "the pool is not announced with BGP"))
		}
		if pool.WeightedECMP && !bgp {
			errs = append(errs, field.Invalid(pp.Child("weightedECMP"), true, "the pool is not announced with BGP"))
		}
		pool.serviceCommunities = community.Set{}
		for j, c := range pool.ServiceCommunities {
			if err := pool.serviceCommunities.Parse(c); err != nil {
				errs = append(errs, field.Invalid(pp.Child("serviceCommunities").Index(j), c, err.Error()))
			}
		}
		pool.serviceCommunities.Normalize()
		sentBy := map[string]int{} // peer name -> the advertisement that sends it the pool
		for j := range pool.BGPAdvertisements {
			a := &pool.BGPAdvertisements[j]
			ap := pp.Child("bgpAdvertisements").Index(j)
			errs = append(errs, a.validate(ap, b)...)
			for _, name := range a.peers {
				if k, dup := sentBy[name]; dup {
					errs = append(errs, field.Invalid(ap, name, fmt.Sprintf("peer %s already gets the pool from bgpAdvertisements[%d]", name, k)))
				} else {
					sentBy[name] = j
				}
			}
			errs = append(errs, lb.validateAggregate(ap.Child("aggregate"), i, a.Aggregate)...)
		}
	}
	return errs
}

// validate checks one advertisement and resolves its peers.
func (a *BGPAdvertisement) validate(p *field.Path, b *BGP) field.ErrorList {
	var errs field.ErrorList
	a.peers, a.communities = nil, community.Set{}
	if len(b.Peers) == 0 {
		errs = append(errs, field.Required(field.NewPath("bgp", "peers"), "bgpAdvertisements need peers to send to"))
	}
	var sel labels.Selector
	switch {
	case len(a.Peers) > 0 && a.PeerSelector != nil:
		errs = append(errs, field.Invalid(p.Child("peerSelector"), a.PeerSelector, "give peers or peerSelector, not both"))
	case a.PeerSelector != nil:
		s, err := metav1.LabelSelectorAsSelector(a.PeerSelector)
		if err != nil {
			errs = append(errs, field.Invalid(p.Child("peerSelector"), a.PeerSelector, err.Error()))
		}
		sel = s
	}
	for k, name := range a.Peers {
		if !slices.ContainsFunc(b.Peers, func(peer BGPPeer) bool { return peer.name == name }) {
			errs = append(errs, field.NotFound(p.Child("peers").Index(k), name))
		} else if slices.Index(a.Peers, name) < k {
			errs = append(errs, field.Duplicate(p.Child("peers").Index(k), name))
		}
	}
	for k := range b.Peers {
		peer := &b.Peers[k]
		switch {
		case len(a.Peers) > 0:
			if !slices.Contains(a.Peers, peer.name) {
				continue
			}
		case sel != nil:
			if !sel.Matches(labels.Set(peer.Labels)) {
				continue
			}
		}
		a.peers = append(a.peers, peer.name)
		if a.LocalPreference != nil && peer.ASN != b.ASN {
			errs = append(errs, field.Invalid(p.Child("localPreference"), *a.LocalPreference,
				fmt.Sprintf("local preference is for iBGP peers only: peer %s has AS %d, bgp.asn is %d", peer.name, peer.ASN, b.ASN)))
		}
	}
	if len(b.Peers) > 0 && len(a.peers) == 0 && len(errs) == 0 {
		errs = append(errs, field.Invalid(p, describeSelection(a), "selects no peer: the pool would be sent to no router this way"))
	}
	for k, c := range a.Communities {
		v, err := community.ParseStandard(c)
		if err != nil {
			errs = append(errs, field.Invalid(p.Child("communities").Index(k), c, err.Error()))
			continue
		}
		a.communities.Standard = append(a.communities.Standard, v)
	}
	for k, c := range a.LargeCommunities {
		v, err := community.ParseLarge(c)
		if err != nil {
			errs = append(errs, field.Invalid(p.Child("largeCommunities").Index(k), c, err.Error()))
			continue
		}
		a.communities.Large = append(a.communities.Large, v)
	}
	a.communities.Normalize()
	return errs
}

// describeSelection writes how an advertisement picks its peers, for an
// error.
func describeSelection(a *BGPAdvertisement) string {
	if len(a.Peers) > 0 {
		return "peers " + strings.Join(a.Peers, ",")
	}
	return "peerSelector " + metav1.FormatLabelSelector(a.PeerSelector)
}

// validateAggregate checks an aggregate's lengths, and that each aggregate
// of pool i covers no other pool's address: an aggregate belongs to one
// pool, so that its attributes are that pool's.
func (lb *LoadBalancer) validateAggregate(p *field.Path, i int, agg *Aggregate) field.ErrorList {
	if agg == nil {
		return nil
	}
	var errs field.ErrorList
	if agg.IPv4Length == nil && agg.IPv6Length == nil {
		errs = append(errs, field.Required(p, "ipv4Length or ipv6Length"))
	}
	for _, fam := range []struct {
		name   string
		length *int
		bits   int
	}{{"ipv4Length", agg.IPv4Length, 32}, {"ipv6Length", agg.IPv6Length, 128}} {
		if fam.length == nil {
			continue
		}
		// A full-length aggregate would be the address itself.
		if *fam.length < 1 || *fam.length >= fam.bits {
			errs = append(errs, field.Invalid(p.Child(fam.name), *fam.length, fmt.Sprintf("must be from 1 to %d", fam.bits-1)))
			continue
		}
		for _, r := range lb.Pools[i].ranges {
			if r.Is4() != (fam.bits == 32) {
				continue
			}
			span := ipam.Range{
				First: ipam.PrefixRange(netip.PrefixFrom(r.First, *fam.length)).First,
				Last:  ipam.PrefixRange(netip.PrefixFrom(r.Last, *fam.length)).Last,
			}
			for j := range lb.Pools {
				if j == i {
					continue
				}
				for _, o := range lb.Pools[j].ranges {
					if o.Overlaps(span) {
						errs = append(errs, field.Invalid(p.Child(fam.name), *fam.length,
							fmt.Sprintf("the aggregates of %s cover pool %s's %s: an aggregate must hold one pool's addresses only", r, lb.Pools[j].Name, o)))
					}
				}
			}
		}
	}
	return errs
}
