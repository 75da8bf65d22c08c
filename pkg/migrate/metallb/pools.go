package metallb

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"

	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/ipam"
	"github.com/metal-ccm/metal-ccm/pkg/migrate"
)

// convertPools writes one pool per IPAddressPool, in MetalLB's order of
// preference: a Service that names no pool gets the first pool, in config
// order, that allows it, so the pools with a serviceAllocation priority come
// first (lowest number first), then those with a serviceAllocation, then
// the others.
func (c *converter) convertPools(lb *config.LoadBalancer) {
	pools := slices.Clone(c.in.pools)
	slices.SortStableFunc(pools, func(a, b *ipAddressPool) int { return cmp.Compare(rank(a), rank(b)) })
	c.poolIndex = map[string]int{}
	for _, p := range pools {
		r := ref(KindIPAddressPool, &p.object)
		name, ok := migrate.Label(p.Metadata.Name)
		if !ok {
			c.rep.Add(r, "metadata.name", "not a DNS label: the pool is named %q, so Services that name %q in metallb.io/address-pool get UnknownPool until their annotation names %q", name, p.Metadata.Name, name)
		}
		if _, dup := c.poolIndex[p.Metadata.Name]; dup {
			c.rep.Add(r, "metadata.name", "a second IPAddressPool of this name (in another namespace): skipped")
			continue
		}
		pool := config.Pool{Name: name, AutoAssign: p.Spec.AutoAssign}
		for i, a := range p.Spec.Addresses {
			pool.Addresses = append(pool.Addresses, c.addresses(r, fmt.Sprintf("spec.addresses[%d]", i), a, p.Spec.AvoidBuggyIPs)...)
		}
		c.serviceAllocation(r, p.Spec.ServiceAllocation, &pool)
		c.poolIndex[p.Metadata.Name] = len(lb.Pools)
		c.poolOf = append(c.poolOf, p)
		lb.Pools = append(lb.Pools, pool)
	}
}

// rank orders pools as MetalLB prefers them.
func rank(p *ipAddressPool) int {
	sa := p.Spec.ServiceAllocation
	switch {
	case sa != nil && sa.Priority > 0:
		return sa.Priority
	case sa != nil:
		return 1 << 30
	}
	return 1<<30 + 1
}

// addresses converts one entry of spec.addresses. A range is written
// without spaces; with avoidBuggyIPs, the IPv4 addresses ending in .0 or
// .255 are left out, as MetalLB never hands them out.
func (c *converter) addresses(r, path, a string, avoidBuggy bool) []string {
	rg, err := ipam.ParseRange(a)
	if err != nil {
		c.rep.Add(r, path, "not a CIDR or range (%v): left out", err)
		return nil
	}
	if !avoidBuggy || !rg.Is4() {
		if p, err := netip.ParsePrefix(a); err == nil {
			return []string{p.String()}
		}
		return []string{rg.String()}
	}
	var out []string
	for _, part := range withoutBuggy(rg) {
		out = append(out, part.String())
	}
	if len(out) == 0 {
		c.rep.Add(r, path, "avoidBuggyIPs leaves no address of %s: left out", a)
	}
	return out
}

// withoutBuggy splits an IPv4 range around its addresses ending in .0 and
// .255.
func withoutBuggy(r ipam.Range) []ipam.Range {
	var out []ipam.Range
	first := r.First
	for {
		b := first.As4()
		if b[3] == 0 {
			b[3] = 1
		}
		first = netip.AddrFrom4(b)
		b[3] = 254
		last := netip.AddrFrom4(b)
		if r.Last.Less(last) {
			last = r.Last
			if l := last.As4(); l[3] == 255 {
				l[3] = 254
				last = netip.AddrFrom4(l)
			}
		}
		if r.Last.Less(first) {
			return out
		}
		if !last.Less(first) {
			out = append(out, ipam.Range{First: first, Last: last})
		}
		b[3] = 255
		next := netip.AddrFrom4(b).Next()
		if !next.IsValid() || r.Last.Less(next) {
			return out
		}
		first = next
	}
}

// serviceAllocation maps what has an equivalent: the namespaces and one
// service selector. The priority is the pools' order (convertPools).
func (c *converter) serviceAllocation(r string, sa *serviceAllocation, pool *config.Pool) {
	if sa == nil {
		return
	}
	pool.Namespaces = sa.Namespaces
	if len(sa.NamespaceSelectors) > 0 {
		msg := "no equivalent: a pool names its namespaces (loadBalancer.pools[].namespaces); add those the selectors match"
		if len(sa.Namespaces) == 0 {
			msg += " (none is set, so Services of every namespace may use the pool)"
		}
		c.rep.Add(r, "spec.serviceAllocation.namespaceSelectors", msg)
	}
	switch len(sa.ServiceSelectors) {
	case 0:
	case 1:
		sel := sa.ServiceSelectors[0]
		pool.ServiceSelector = &sel
	default:
		c.rep.Add(r, "spec.serviceAllocation.serviceSelectors",
			"%d selectors (any matching): a pool has one serviceSelector; none is set, so every Service may use the pool: merge them into one or split the pool", len(sa.ServiceSelectors))
	}
}
