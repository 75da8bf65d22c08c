// Package ipam allocates LoadBalancer IPs from pools. Its state is rebuilt from
// what Services hold (their status) and kept consistent under concurrent
// allocation; it never reads or writes the API server itself.
package ipam

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"strings"
)

// Range is an inclusive range of addresses of one family.
type Range struct {
	First, Last netip.Addr
}

// ErrBadRange marks an address range that cannot be parsed.
var ErrBadRange = errors.New("not a CIDR or an address range")

// ParseRange parses a CIDR in canonical form ("198.18.100.0/24") or an
// inclusive range ("198.18.101.10-198.18.101.20") of one family.
func ParseRange(s string) (Range, error) {
	s = strings.TrimSpace(s)
	if first, last, ok := strings.Cut(s, "-"); ok {
		a, err := netip.ParseAddr(strings.TrimSpace(first))
		if err != nil {
			return Range{}, fmt.Errorf("parse range %q: %w: %w", s, ErrBadRange, err)
		}
		b, err := netip.ParseAddr(strings.TrimSpace(last))
		if err != nil {
			return Range{}, fmt.Errorf("parse range %q: %w: %w", s, ErrBadRange, err)
		}
		if a.Zone() != "" || b.Zone() != "" || a.Is4In6() || b.Is4In6() {
			return Range{}, fmt.Errorf("parse range %q: %w: zoned or IPv4-mapped address", s, ErrBadRange)
		}
		if a.Is4() != b.Is4() {
			return Range{}, fmt.Errorf("parse range %q: %w: the two ends are of different families", s, ErrBadRange)
		}
		if b.Less(a) {
			return Range{}, fmt.Errorf("parse range %q: %w: the first address is after the last", s, ErrBadRange)
		}
		return checkMapped(s, Range{First: a, Last: b})
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return Range{}, fmt.Errorf("parse range %q: %w: %w", s, ErrBadRange, err)
	}
	if p.Addr().Is4In6() {
		return Range{}, fmt.Errorf("parse range %q: %w: IPv4-mapped address", s, ErrBadRange)
	}
	if p.Masked() != p {
		return Range{}, fmt.Errorf("parse range %q: %w: host bits are set, the network is %s", s, ErrBadRange, p.Masked())
	}
	return checkMapped(s, Range{First: p.Addr(), Last: lastOf(p)})
}

// mappedSpace is ::ffff:0:0/96, where IPv4-mapped IPv6 addresses are.
var mappedSpace = Range{First: netip.MustParseAddr("::ffff:0.0.0.0"), Last: netip.MustParseAddr("::ffff:255.255.255.255")}

// checkMapped refuses an IPv6 range that covers part of the IPv4-mapped
// space (as "::/64" does): its addresses would be taken for IPv4 ones.
func checkMapped(s string, r Range) (Range, error) {
	if r.Overlaps(mappedSpace) {
		return Range{}, fmt.Errorf("parse range %q: %w: it covers IPv4-mapped addresses (%s)", s, ErrBadRange, mappedSpace)
	}
	return r, nil
}

func lastOf(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 1 << (7 - uint(i%8))
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// String is the range as "first-last".
func (r Range) String() string { return r.First.String() + "-" + r.Last.String() }

// Is4 reports whether the range is IPv4.
func (r Range) Is4() bool { return r.First.Is4() }

// Contains reports whether ip is in the range.
func (r Range) Contains(ip netip.Addr) bool {
	ip = ip.Unmap()
	return ip.Is4() == r.Is4() && r.First.Compare(ip) <= 0 && ip.Compare(r.Last) <= 0
}

// Overlaps reports whether the ranges share an address.
func (r Range) Overlaps(o Range) bool {
	return r.Is4() == o.Is4() && r.First.Compare(o.Last) <= 0 && o.First.Compare(r.Last) <= 0
}

// Size is the number of addresses, capped at math.MaxUint64.
func (r Range) Size() uint64 {
	hi1, lo1 := split(r.First)
	hi2, lo2 := split(r.Last)
	hi, lo := hi2-hi1, lo2-lo1
	if lo2 < lo1 {
		hi--
	}
	if hi > 0 || lo == math.MaxUint64 {
		return math.MaxUint64
	}
	return lo + 1
}

// Nth is the n-th address of the range, counting from 0; n must be < Size().
func (r Range) Nth(n uint64) netip.Addr {
	hi, lo := split(r.First)
	lo2 := lo + n
	if lo2 < lo {
		hi++
	}
	return join(hi, lo2, r.Is4())
}

func split(a netip.Addr) (hi, lo uint64) {
	b := a.As16()
	return binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
}

func join(hi, lo uint64, is4 bool) netip.Addr {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], hi)
	binary.BigEndian.PutUint64(b[8:], lo)
	a := netip.AddrFrom16(b)
	if is4 {
		return a.Unmap()
	}
	return a
}

// PrefixRange is the range of every address in p (masked first).
func PrefixRange(p netip.Prefix) Range {
	p = p.Masked()
	return Range{First: p.Addr(), Last: lastOf(p)}
}
