package metallb

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/metal-ccm/metal-ccm/pkg/config"
)

// Host-route lengths: MetalLB's default aggregation lengths, which mean no
// aggregate.
const (
	hostLength4 = 32
	hostLength6 = 128
)

// convertBGPAdvertisements gives each pool the advertisements its peers
// get it by. MetalLB may send a peer a pool by several BGPAdvertisements;
// here a peer gets a pool by one, so the peers that the same set of
// BGPAdvertisements selects get one advertisement that merges them.
func (c *converter) convertBGPAdvertisements(cfg *config.CloudConfig) {
	aliases := c.aliases()
	c.announced = map[string]bool{}
	for _, ad := range c.in.bgpAds {
		r := ref(KindBGPAdvertisement, &ad.object)
		if len(ad.Spec.NodeSelectors) > 0 {
			c.rep.Add(r, "spec.nodeSelectors", "no equivalent: every eligible node announces the pool (with announceFrom Nodes, bgp.peers[].nodeSelector picks the nodes of a peer)")
		}
		for _, name := range ad.Spec.Peers {
			if _, ok := c.peerName[name]; !ok {
				c.rep.Add(r, "spec.peers", "no BGPPeer %s: left out", name)
			}
		}
	}
	for i := range cfg.LoadBalancer.Pools {
		pool := &cfg.LoadBalancer.Pools[i]
		ads := c.bgpAdsOf(c.poolOf[i])
		if len(ads) == 0 {
			continue
		}
		advs, sent := c.poolAdvertisements(ads, cfg.BGP.Peers, aliases)
		if !sent {
			// Every BGPAdvertisement of the pool names peers that are
			// not there: MetalLB sends it to none, as no BGP does here.
			continue
		}
		c.announced[c.poolOf[i].Metadata.Name] = true
		pool.Announce = append(pool.Announce, config.ProtocolBGP)
		pool.BGPAdvertisements = advs
	}
}

// poolAdvertisements groups the peers by the BGPAdvertisements that send
// them the pool, and merges each group's into one advertisement; sent is
// false when there are peers and none gets the pool.
func (c *converter) poolAdvertisements(ads []*bgpAdvertisement, peers []config.BGPPeer, aliases map[string]string) (out []config.BGPAdvertisement, sent bool) {
	type group struct {
		ads   []*bgpAdvertisement
		ibgp  bool
		peers []string
	}
	var groups []*group
	for _, p := range peers {
		var sel []*bgpAdvertisement
		for _, ad := range ads {
			if c.adSelectsPeer(ad, p.Name) {
				sel = append(sel, ad)
			}
		}
		if len(sel) == 0 {
			continue
		}
		// A local preference goes to iBGP peers only (MetalLB sends eBGP
		// peers none either), so those are grouped apart.
		ibgp := c.peerIBGP[p.Name] && slices.ContainsFunc(sel, func(ad *bgpAdvertisement) bool { return ad.Spec.LocalPref != 0 })
		i := slices.IndexFunc(groups, func(g *group) bool { return slices.Equal(g.ads, sel) && g.ibgp == ibgp })
		if i < 0 {
			groups = append(groups, &group{ads: sel, ibgp: ibgp})
			i = len(groups) - 1
		}
		groups[i].peers = append(groups[i].peers, p.Name)
	}
	for _, g := range groups {
		adv := c.merge(g.ads, g.peers, aliases)
		if len(groups) == 1 && len(g.peers) == len(peers) {
			adv.Peers = nil // every peer
			if isZero(adv) {
				return nil, true // the default: every peer, host routes, no attributes
			}
		}
		out = append(out, adv)
	}
	return out, len(out) > 0 || len(peers) == 0
}

func isZero(a config.BGPAdvertisement) bool {
	return a.Peers == nil && a.PeerSelector == nil && len(a.Communities) == 0 && len(a.LargeCommunities) == 0 &&
		a.LocalPreference == nil && a.Aggregate == nil
}

// merge makes one advertisement of the BGPAdvertisements that send the
// same peers a pool: their communities together, their local preference,
// and their aggregation lengths.
func (c *converter) merge(ads []*bgpAdvertisement, peers []string, aliases map[string]string) config.BGPAdvertisement {
	adv := config.BGPAdvertisement{Peers: peers}
	ibgp := !slices.ContainsFunc(peers, func(p string) bool { return !c.peerIBGP[p] })
	for _, ad := range ads {
		r := ref(KindBGPAdvertisement, &ad.object)
		for j, v := range ad.Spec.Communities {
			value, large, ok := resolve(v, aliases)
			switch {
			case !ok:
				c.rep.Add(r, fmt.Sprintf("spec.communities[%d]", j), "%q is neither a community nor a Community alias: left out", v)
			case large && !slices.Contains(adv.LargeCommunities, value):
				adv.LargeCommunities = append(adv.LargeCommunities, value)
			case !large && !slices.Contains(adv.Communities, value):
				adv.Communities = append(adv.Communities, value)
			}
		}
		if lp := ad.Spec.LocalPref; lp != 0 && ibgp {
			if adv.LocalPreference != nil && *adv.LocalPreference != lp {
				c.rep.Add(r, "spec.localPref", "%d differs from %d of another BGPAdvertisement of the same pool and peers (%s): %d is kept",
					lp, *adv.LocalPreference, strings.Join(peers, ", "), *adv.LocalPreference)
			} else {
				adv.LocalPreference = &lp
			}
		}
	}
	adv.Aggregate = c.aggregate(ads)
	return adv
}

// aggregate maps the aggregation lengths: a length shorter than a host
// route announces the aggregate instead of the addresses (only); a host
// route and a shorter length from two BGPAdvertisements announce both.
func (c *converter) aggregate(ads []*bgpAdvertisement) *config.Aggregate {
	var v4, v6 []int
	for _, ad := range ads {
		v4 = appendLength(v4, ad.Spec.AggregationLength, hostLength4)
		v6 = appendLength(v6, ad.Spec.AggregationLengthV6, hostLength6)
	}
	agg := &config.Aggregate{}
	only4 := c.length(ads, v4, hostLength4, "spec.aggregationLength", &agg.IPv4Length)
	only6 := c.length(ads, v6, hostLength6, "spec.aggregationLengthV6", &agg.IPv6Length)
	switch {
	case agg.IPv4Length == nil && agg.IPv6Length == nil:
		return nil
	case agg.IPv4Length != nil && agg.IPv6Length != nil && only4 != only6:
		c.rep.Add(ref(KindBGPAdvertisement, &ads[0].object), "spec.aggregationLength",
			"one family is announced as an aggregate only, the other also as host routes: one only flag covers both, so both families get their host routes too")
		agg.Only = false
	default:
		agg.Only = only4 && only6
	}
	return agg
}

func appendLength(ls []int, l *int32, host int) []int {
	v := host
	if l != nil {
		v = int(*l)
	}
	if !slices.Contains(ls, v) {
		ls = append(ls, v)
	}
	return ls
}

// length sets *dst to the one aggregate length of a family and says
// whether the host routes are left out; a family without an aggregate is
// only in the sense that it adds nothing.
func (c *converter) length(ads []*bgpAdvertisement, ls []int, host int, field string, dst **int) (only bool) {
	var aggs []int
	for _, l := range ls {
		if l < host {
			aggs = append(aggs, l)
		}
	}
	if len(aggs) == 0 {
		return true
	}
	if len(aggs) > 1 {
		c.rep.Add(ref(KindBGPAdvertisement, &ads[0].object), field,
			"lengths %v for the same pool and peers: one aggregate length per family, /%d is kept", aggs, aggs[0])
	}
	l := aggs[0]
	*dst = &l
	return !slices.Contains(ls, host)
}

// bgpAdsOf is the BGPAdvertisements that select pool.
func (c *converter) bgpAdsOf(pool *ipAddressPool) []*bgpAdvertisement {
	var out []*bgpAdvertisement
	for _, ad := range c.in.bgpAds {
		if selectsPool(ad.Spec.IPAddressPools, ad.Spec.IPAddressPoolSelectors, pool) {
			out = append(out, ad)
		}
	}
	return out
}

func (c *converter) adSelectsPeer(ad *bgpAdvertisement, peer string) bool {
	if len(ad.Spec.Peers) == 0 {
		return true
	}
	return slices.ContainsFunc(ad.Spec.Peers, func(n string) bool { return c.peerName[n] == peer })
}

// checkPoolSelectors reports the pool selectors that are not label
// selectors: they select no pool.
func (c *converter) checkPoolSelectors() {
	check := func(r string, sels []metav1.LabelSelector) {
		for i := range sels {
			if _, err := metav1.LabelSelectorAsSelector(&sels[i]); err != nil {
				c.rep.Add(r, fmt.Sprintf("spec.ipAddressPoolSelectors[%d]", i), "not a label selector (%v): selects no pool", err)
			}
		}
	}
	for _, ad := range c.in.bgpAds {
		check(ref(KindBGPAdvertisement, &ad.object), ad.Spec.IPAddressPoolSelectors)
	}
	for _, ad := range c.in.l2Ads {
		check(ref(KindL2Advertisement, &ad.object), ad.Spec.IPAddressPoolSelectors)
	}
}

// selectsPool tells whether an advertisement's pools and pool selectors
// pick pool; with neither, it picks every pool.
func selectsPool(names []string, sels []metav1.LabelSelector, pool *ipAddressPool) bool {
	if len(names) == 0 && len(sels) == 0 {
		return true
	}
	if slices.Contains(names, pool.Metadata.Name) {
		return true
	}
	for i := range sels {
		s, err := metav1.LabelSelectorAsSelector(&sels[i])
		if err == nil && s.Matches(labels.Set(pool.Metadata.Labels)) {
			return true
		}
	}
	return false
}
