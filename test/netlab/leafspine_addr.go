package netlab

import (
	"fmt"
	"net/netip"
)

// The leaf-spine lab's address plan (see the figure in leafspine.go): fixed
// addresses, so tests and docs can name them without a running lab.

// lsAddr is host number host of 198.18.<net>.0/24, or of 2001:db8:<net>::/64
// written the same way in decimal digits (.11 is ::11), as segmentAddr.
func lsAddr(f Family, net, host int) netip.Addr { return segmentAddr(f, net, host) }

// LeafSpineNodeAddr is the address of node i of rack r on its rack's
// subnet (198.18.3r.11+i, 2001:db8:3r::11+i).
func LeafSpineNodeAddr(f Family, r, i int) netip.Addr { return lsAddr(f, 30+r, 11+i) }

// LeafSpineNodeSubnet is rack r's node subnet (198.18.3r.0/24,
// 2001:db8:3r::/64).
func LeafSpineNodeSubnet(f Family, r int) netip.Prefix {
	if f == IPv6 {
		return netip.PrefixFrom(lsAddr(f, 30+r, 0), 64)
	}
	return netip.PrefixFrom(lsAddr(f, 30+r, 0), 24)
}

// LeafSpineTorAddr is ToR r's address on its rack's subnet: its nodes'
// gateway and BGP neighbor.
func LeafSpineTorAddr(f Family, r int) netip.Addr { return lsAddr(f, 30+r, 1) }

// LeafSpineTorUplinkAddr is ToR r's address on its link to the spine: the
// next hop of the spine's routes through it.
func LeafSpineTorUplinkAddr(f Family, r int) netip.Addr { return lsUplinkAddr(f, r, 2) }

// LeafSpineSpineAddr is the spine's address on its link to ToR r.
func LeafSpineSpineAddr(f Family, r int) netip.Addr { return lsUplinkAddr(f, r, 1) }

// lsUplinkAddr is host h (1 spine, 2 ToR) of the link of ToR r:
// 198.18.24.(4r+h)/30, 2001:db8:24:r::h/64.
func lsUplinkAddr(f Family, r, h int) netip.Addr {
	if f == IPv6 {
		return netip.MustParseAddr(fmt.Sprintf("2001:db8:24:%d::%d", r, h))
	}
	return netip.AddrFrom4([4]byte{198, 18, 24, byte(4*r + h)}) //nolint:gosec // r is 0 or 1, h 1 or 2
}

// lsUplinkBits is the prefix length of a ToR–spine link.
func lsUplinkBits(f Family) int {
	if f == IPv6 {
		return 64
	}
	return 30
}

// LeafSpineClientAddr is the client's address (198.18.25.2, 2001:db8:25::2).
func LeafSpineClientAddr(f Family) netip.Addr { return lsAddr(f, 25, 2) }

// LeafSpineClientGateway is the spine's address on the client link.
func LeafSpineClientGateway(f Family) netip.Addr { return lsAddr(f, 25, 1) }

// NodeNamespace is the namespace of node i of rack r.
func (ls *LeafSpine) NodeNamespace(r, i int) string { return ls.Racks[r][i] }

// NodeAddrs are the addresses of family f of rack r's nodes, by index.
func (ls *LeafSpine) NodeAddrs(f Family, r int) []netip.Addr {
	out := make([]netip.Addr, len(ls.Racks[r]))
	for i := range out {
		out[i] = LeafSpineNodeAddr(f, r, i)
	}
	return out
}
