package metallb

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/metal-ccm/metal-ccm/pkg/config"
)

// convertL2Advertisements adds L2 to the announce list of every pool an
// L2Advertisement selects. Interfaces and node selectors are per
// advertisement in MetalLB and global here (l2.interfaces,
// l2.nodeSelector): they are kept when every L2Advertisement has the same.
func (c *converter) convertL2Advertisements(cfg *config.CloudConfig) {
	if len(c.in.l2Ads) == 0 {
		return
	}
	found := false
	for i := range cfg.LoadBalancer.Pools {
		for _, ad := range c.in.l2Ads {
			if selectsPool(ad.Spec.IPAddressPools, ad.Spec.IPAddressPoolSelectors, c.poolOf[i]) {
				cfg.LoadBalancer.Pools[i].Announce = append(cfg.LoadBalancer.Pools[i].Announce, config.ProtocolL2)
				c.announced[c.poolOf[i].Metadata.Name] = true
				found = true
				break
			}
		}
	}
	if !found {
		return
	}
	l2 := &cfg.L2
	l2.SecretFile = c.opts.L2SecretFile
	l2.MemberlistPort = c.opts.MemberlistPort
	first := c.in.l2Ads[0]
	same := func(f func(a, b *l2Advertisement) bool) bool {
		return !slices.ContainsFunc(c.in.l2Ads[1:], func(ad *l2Advertisement) bool { return !f(first, ad) })
	}
	switch {
	case !same(func(a, b *l2Advertisement) bool { return slices.Equal(a.Spec.Interfaces, b.Spec.Interfaces) }):
		for _, ad := range c.in.l2Ads {
			if len(ad.Spec.Interfaces) > 0 {
				c.rep.Add(ref(KindL2Advertisement, &ad.object), "spec.interfaces", "L2Advertisements differ in their interfaces: l2.interfaces is one list for all pools and is left unset (the interfaces whose subnet holds the address)")
			}
		}
	default:
		l2.Interfaces = first.Spec.Interfaces
	}
	sels := func(a, b *l2Advertisement) bool {
		return equality.Semantic.DeepEqual(a.Spec.NodeSelectors, b.Spec.NodeSelectors)
	}
	switch {
	case !same(sels) || len(first.Spec.NodeSelectors) > 1:
		for _, ad := range c.in.l2Ads {
			if len(ad.Spec.NodeSelectors) > 0 {
				c.rep.Add(ref(KindL2Advertisement, &ad.object), "spec.nodeSelectors", "l2.nodeSelector is one selector for all pools (and the nodes that count towards the majority); it is left unset: every node takes part")
			}
		}
	case len(first.Spec.NodeSelectors) == 1:
		sel := first.Spec.NodeSelectors[0]
		l2.NodeSelector = &sel
	}
}

// checkAnnounced reports the pools no advertisement selects: MetalLB hands
// their addresses out and announces them nowhere.
func (c *converter) checkAnnounced(cfg *config.CloudConfig) {
	for i, p := range c.poolOf {
		if c.announced[p.Metadata.Name] {
			continue
		}
		c.rep.Add(ref(KindIPAddressPool, &p.object), "", "no BGPAdvertisement or L2Advertisement selects it, so MetalLB announces it nowhere; here it is announced with BGP to every peer (announce defaults to [BGP])")
		cfg.LoadBalancer.Pools[i].Announce = nil
	}
}
