package announcer

import (
	"cmp"
	"net/netip"
	"slices"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/limits"
)

// MaxNextHops is the most next hops one address can be announced with: the
// BGP speaker's ADD-PATH limit.
const MaxNextHops = limits.MaxNextHops

// capNextHops keeps at most limit of the sorted hops, chosen by rendezvous
// hashing of the prefix and each hop: every prefix gets a stable choice, the
// prefixes spread over all nodes, and a node that comes or goes moves at most
// one path of each prefix. The result is sorted; a list within the limit is
// returned as it is.
func capNextHops(p netip.Prefix, hops []netip.Addr, limit int) []netip.Addr {
	if len(hops) <= limit {
		return hops
	}
	type scored struct {
		score uint64
		hop   netip.Addr
	}
	seed := fnv64(fnvOffset, p.Addr().As16()) // host prefixes: the address tells them apart
	all := make([]scored, len(hops))
	for i, h := range hops {
		all[i] = scored{mix64(fnv64(seed, h.As16())), h}
	}
	slices.SortFunc(all, func(a, b scored) int {
		if a.score != b.score {
			return cmp.Compare(a.score, b.score)
		}
		return a.hop.Compare(b.hop)
	})
	out := make([]netip.Addr, limit)
	for i := range out {
		out[i] = all[i].hop
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return out
}

// FNV-1a, 64 bits, over 16-byte blocks without allocating.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// mix64 is the finalizer of SplitMix64. FNV-1a alone barely mixes its last
// byte into the high bits, so hops that differ only there (the nodes of one
// subnet) would score in nearly their own order and one subnet's nodes would
// be chosen together.
func mix64(z uint64) uint64 {
	z ^= z >> 30
	z *= 0xbf58476d1ce4e5b9
	z ^= z >> 27
	z *= 0x94d049bb133111eb
	return z ^ z>>31
}

func fnv64(h uint64, b [16]byte) uint64 {
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime
	}
	return h
}
