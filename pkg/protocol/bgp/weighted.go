package bgp

import (
	"net/netip"

	v1 "k8s.io/api/core/v1"

	"github.com/metal-ccm/metal-ccm/pkg/config"
)

// WeightedECMP is announcer.Options.Weighted from the pools' weightedECMP:
// an address of such a pool is weighted (the announcer weighs only those of
// Services with externalTrafficPolicy Local). Nil when no pool asks for it,
// so that the announcer keeps no weights at all.
func WeightedECMP(lb *config.LoadBalancer) func(*v1.Service, netip.Addr) bool {
	on := false
	for i := range lb.Pools {
		on = on || lb.Pools[i].WeightedECMP
	}
	if !on {
		return nil
	}
	return func(_ *v1.Service, addr netip.Addr) bool {
		p := lb.PoolOf(addr)
		return p != nil && p.WeightedECMP
	}
}
