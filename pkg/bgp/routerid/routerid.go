// Package routerid holds the rule of a BGP speaker's identifier. It imports
// nothing of the speaker, so that the test labs can apply the same rule.
package routerid

import (
	"encoding/binary"
	"net/netip"
)

// FromIPv6 is the BGP identifier (RFC 6286: four octets, not zero)
// of a speaker that has no IPv4 address to use: a's last 32 bits XORed with
// its first 96 folded into 32 (XOR of the three words). Within one /96 the
// rule is one-to-one, so the nodes of a subnet never share an identifier;
// nodes of different subnets that end alike (::10 in every rack) get
// different identifiers, as the subnets fold differently. Where the XOR is
// zero the last 32 bits are used alone (and 0.0.0.1 if they are zero too).
func FromIPv6(a netip.Addr) netip.Addr {
	b := a.As16()
	word := func(i int) uint32 { return binary.BigEndian.Uint32(b[4*i:]) }
	id := word(3) ^ word(0) ^ word(1) ^ word(2)
	if id == 0 {
		id = max(word(3), 1)
	}
	var out [4]byte
	binary.BigEndian.PutUint32(out[:], id)
	return netip.AddrFrom4(out)
}

// For is the identifier of a speaker at addr: addr itself when it is
// IPv4, else FromIPv6(addr).
func For(addr netip.Addr) netip.Addr {
	if addr = addr.Unmap(); addr.Is4() {
		return addr
	}
	return FromIPv6(addr)
}
