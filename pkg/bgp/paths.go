package bgp

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"net/netip"
	"slices"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/limits"
)

// checkPaths validates a SetPaths call and returns the next hops sorted and
// without duplicates.
func checkPaths(prefix netip.Prefix, nextHops []netip.Addr) ([]netip.Addr, error) {
	if !prefix.IsValid() || prefix.Masked() != prefix || prefix.Addr().Zone() != "" || prefix.Addr().Is4In6() {
		return nil, fmt.Errorf("prefix %s must be a canonical IPv4 or IPv6 prefix", prefix)
	}
	hops := nextHops
	if !sortedUnique(hops) {
		hops = slices.Clone(nextHops)
		slices.SortFunc(hops, netip.Addr.Compare)
		hops = slices.Compact(hops)
	}
	for _, nh := range hops {
		if !nh.IsValid() || nh.IsUnspecified() || nh.Zone() != "" || nh.Is4() != prefix.Addr().Is4() || nh.Is4In6() {
			return nil, fmt.Errorf("next hop %s of %s must be a unicast address of the prefix's family", nh, prefix)
		}
	}
	if len(hops) > limits.MaxNextHops {
		return nil, fmt.Errorf("%d next hops for %s, at most %d", len(hops), prefix, limits.MaxNextHops)
	}
	return hops, nil
}

// sortedUnique reports whether hops is sorted without duplicates.
func sortedUnique(hops []netip.Addr) bool {
	for i := 1; i < len(hops); i++ {
		if hops[i-1].Compare(hops[i]) >= 0 {
			return false
		}
	}
	return true
}

// hopPath is one path of a prefix: its next hop and path identifier.
type hopPath struct {
	hop netip.Addr
	id  uint32
}

// hopPaths are a prefix's paths, sorted by next hop: a slice, not a map,
// because the speaker holds one per announced prefix (10,000 and more) and a
// small map costs twice the memory.
type hopPaths []hopPath

// prefixPaths are a prefix's paths as the speaker keeps them: the next hops,
// sorted, and the path identifier of each at the same index. The next hops
// are the caller's own list when SetPaths could use it as it came (sorted,
// no duplicates; callers do not modify it afterwards), so a kept path costs
// its 4-byte identifier, not a copy of its 24-byte address: the speaker
// holds a prefix per announced address, 10,000 and more, each with up to
// maxPathsPerAddress paths.
type prefixPaths struct {
	hops []netip.Addr
	ids  []uint32
}

// paths are pp as a hopPaths to work on (a copy).
func (pp prefixPaths) paths() hopPaths {
	out := make(hopPaths, len(pp.hops))
	for i, h := range pp.hops {
		out[i] = hopPath{h, pp.ids[i]}
	}
	return out
}

// keep is h as the speaker keeps it, with given as its next hops when they
// are the same list.
func keep(h hopPaths, given []netip.Addr) prefixPaths {
	same := len(given) == len(h)
	for i := 0; same && i < len(h); i++ {
		same = h[i].hop == given[i]
	}
	pp := prefixPaths{hops: given, ids: make([]uint32, len(h))}
	if !same {
		pp.hops = make([]netip.Addr, len(h))
	}
	for i, p := range h {
		pp.hops[i], pp.ids[i] = p.hop, p.id
	}
	return pp
}

// find is the index of nh's path, and whether it has one.
func (h hopPaths) find(nh netip.Addr) (int, bool) {
	return slices.BinarySearchFunc(h, nh, func(p hopPath, a netip.Addr) int { return p.hop.Compare(a) })
}

// pathID picks the path identifier of next hop nh: the IPv4 address itself,
// or a hash of the IPv6 address; stable for the same address, and moved on
// past the identifiers in use for the prefix (and 0).
//
// It is the ADD-PATH identifier on the wire: the same next hop goes out
// under the same identifier after a withdrawal and across a restart, so a
// restarted speaker's paths replace those its router kept (graceful
// restart), and only the next hops it no longer has are left for the
// End-of-RIB to remove.
func pathID(nh netip.Addr, used map[uint32]bool) uint32 {
	var id uint32
	if nh.Is4() {
		b := nh.As4()
		id = binary.BigEndian.Uint32(b[:])
	} else {
		h := fnv.New32a()
		b := nh.As16()
		_, _ = h.Write(b[:])
		id = h.Sum32()
	}
	for id == 0 || used[id] {
		id++
	}
	return id
}
