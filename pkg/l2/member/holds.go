package member

import (
	"fmt"
	"net/netip"
	"slices"
)

// Holds are the L2 addresses an agent answers for, in its metadata (version
// 4), with l2.failback Sticky: every agent then leaves an address with the
// live member that says it holds it, while that member can still carry it,
// instead of moving it to a node that comes (back) and comes first by
// rendezvous hashing (pkg/l2/elect). Over memberlist's 512 bytes the
// addresses at the end of the list give way first (encode): those are left
// to rendezvous hashing, as without Sticky.

// encodeHolds appends f's holds: IPv4 count (1) | count × 4 | IPv6 count (1)
// | count × 16.
func encodeHolds(b []byte, holds []netip.Addr) ([]byte, error) {
	var v4, v6 []netip.Addr
	for i, a := range holds {
		switch a = a.Unmap(); {
		case !a.IsValid():
			return nil, fmt.Errorf("held address %d of %d is not valid", i+1, len(holds))
		case a.Is4():
			v4 = append(v4, a)
		default:
			v6 = append(v6, a)
		}
	}
	if len(v4) > 255 || len(v6) > 255 {
		return nil, fmt.Errorf("%d IPv4 and %d IPv6 held addresses: at most 255 each", len(v4), len(v6))
	}
	b = append(b, byte(len(v4))) //nolint:gosec // at most 255, checked above
	for _, a := range v4 {
		s := a.As4()
		b = append(b, s[:]...)
	}
	b = append(b, byte(len(v6))) //nolint:gosec // at most 255, checked above
	for _, a := range v6 {
		s := a.As16()
		b = append(b, s[:]...)
	}
	return b, nil
}

// decodeHolds reads what encodeHolds wrote at the start of b; what follows
// (a later version's fields) is left.
func decodeHolds(b []byte) ([]netip.Addr, error) {
	var out []netip.Addr
	for _, size := range []int{4, 16} {
		if len(b) < 1 || len(b) < 1+size*int(b[0]) {
			return nil, fmt.Errorf("%w: held IPv%d addresses cut short", errMeta, map[int]int{4: 4, 16: 6}[size])
		}
		n := int(b[0])
		b = b[1:]
		for range n {
			a, _ := netip.AddrFromSlice(b[:size])
			out = append(out, a)
			b = b[size:]
		}
	}
	slices.SortFunc(out, netip.Addr.Compare) // Fitness.Held searches them
	return out, nil
}
