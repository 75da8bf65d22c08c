package kubevip

import (
	"net/netip"
	"slices"

	"github.com/metal-ccm/metal-ccm/pkg/ipam"
)

// merge sorts ranges and joins those that overlap or touch: kube-vip's
// lists may repeat addresses, a pool here may not.
func merge(rs []ipam.Range) []ipam.Range {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b ipam.Range) int { return a.First.Compare(b.First) })
	var out []ipam.Range
	for _, r := range rs {
		if n := len(out); n > 0 && out[n-1].Is4() == r.Is4() {
			last := &out[n-1]
			if next := last.Last.Next(); !next.IsValid() || !next.Less(r.First) {
				if last.Last.Less(r.Last) {
					last.Last = r.Last
				}
				continue
			}
		}
		out = append(out, r)
	}
	return out
}

// subtract is what of rs lies outside every range of taken.
func subtract(rs, taken []ipam.Range) []ipam.Range {
	out := rs
	for _, t := range taken {
		var next []ipam.Range
		for _, r := range out {
			next = append(next, cut(r, t)...)
		}
		out = next
	}
	return out
}

// cut is r without the addresses of t: none, one or two ranges.
func cut(r, t ipam.Range) []ipam.Range {
	if !r.Overlaps(t) {
		return []ipam.Range{r}
	}
	var out []ipam.Range
	if r.First.Less(t.First) {
		out = append(out, ipam.Range{First: r.First, Last: t.First.Prev()})
	}
	if t.Last.Less(r.Last) {
		out = append(out, ipam.Range{First: t.Last.Next(), Last: r.Last})
	}
	return out
}

// text writes a range as a CIDR when it is exactly one, else as first-last.
func text(r ipam.Range) string {
	for bits := 0; bits <= r.First.BitLen(); bits++ {
		p := netip.PrefixFrom(r.First, bits)
		if p.Masked() == p && ipam.PrefixRange(p) == r {
			return p.String()
		}
	}
	return r.String()
}
