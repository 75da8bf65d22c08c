package ipam

import (
	"net/netip"

	"k8s.io/apimachinery/pkg/labels"
)

// Pool is a named set of address ranges and the Services that may use it.
type Pool struct {
	Name       string
	Ranges     []Range
	AutoAssign bool
	// Namespaces limits the pool to these namespaces; nil allows all.
	Namespaces map[string]bool
	// Selector limits the pool to Services whose labels match; nil allows all.
	Selector labels.Selector
}

// Allows reports whether a Service of that namespace and labels may use the pool.
func (p *Pool) Allows(namespace string, lbls map[string]string) bool {
	if p.Namespaces != nil && !p.Namespaces[namespace] {
		return false
	}
	return p.Selector == nil || p.Selector.Matches(labels.Set(lbls))
}

// Contains reports whether ip is one of the pool's addresses.
func (p *Pool) Contains(ip netip.Addr) bool {
	for _, r := range p.Ranges {
		if r.Contains(ip) {
			return true
		}
	}
	return false
}

// HasFamily reports whether the pool has addresses of that family.
func (p *Pool) HasFamily(f Family) bool {
	for _, r := range p.Ranges {
		if r.Is4() == (f == IPv4) {
			return true
		}
	}
	return false
}

// Size is the number of addresses of a family, capped at MaxUint64.
func (p *Pool) Size(f Family) uint64 {
	var n uint64
	for _, r := range p.Ranges {
		if r.Is4() != (f == IPv4) {
			continue
		}
		s := r.Size()
		if n+s < n {
			return ^uint64(0)
		}
		n += s
	}
	return n
}

// nth is the n-th address of family f over the pool's ranges in order.
func (p *Pool) nth(f Family, n uint64) netip.Addr {
	for _, r := range p.Ranges {
		if r.Is4() != (f == IPv4) {
			continue
		}
		if s := r.Size(); n >= s {
			n -= s
			continue
		}
		return r.Nth(n)
	}
	return netip.Addr{}
}

// Family is an IP family.
type Family int

// The families.
const (
	IPv4 Family = iota
	IPv6
)

func (f Family) String() string {
	if f == IPv4 {
		return "IPv4"
	}
	return "IPv6"
}

// FamilyOf returns the family of an address.
func FamilyOf(ip netip.Addr) Family {
	if ip.Unmap().Is4() {
		return IPv4
	}
	return IPv6
}
