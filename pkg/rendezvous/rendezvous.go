// Package rendezvous chooses nodes for an address by rendezvous (highest
// random weight) hashing: every node scores each address, and an address
// takes the nodes with the best scores. Every caller that has the same
// address and the same nodes makes the same choice without talking to the
// others, which is what lets each node agent decide on its own which node
// answers for an address, and lets the announcer cap an address's next hops.
package rendezvous

import (
	"cmp"
	"net/netip"
	"slices"
)

// Pick keeps at most limit of the sorted hops, chosen by rendezvous hashing
// of the prefix and each hop: every prefix gets a stable choice, the prefixes
// spread over all nodes, and a node that comes or goes moves at most one
// path of each prefix. The result is sorted; a list within the limit is
// returned as it is.
func Pick(key netip.Prefix, hops []netip.Addr, limit int) []netip.Addr {
	if len(hops) <= limit {
		return hops
	}
	limit = max(limit, 0)
	if limit == 0 {
		return []netip.Addr{}
	}
	// The limit best, kept sorted by score: one pass over hops, most of
	// which lose to the worst kept at the first comparison. Sorting every
	// hop's score instead cost an allocation of the whole list per address,
	// for each of 10,000 addresses whenever a node changed.
	seed := seedOf(key)
	best := make([]scored, 0, limit)
	for _, h := range hops {
		s := scored{score(seed, h), h}
		if len(best) == limit {
			if s.compare(best[limit-1]) >= 0 {
				continue
			}
			best = best[:limit-1]
		}
		i, _ := slices.BinarySearchFunc(best, s, scored.compare)
		best = slices.Insert(best, i, s)
	}
	out := make([]netip.Addr, limit)
	for i := range out {
		out[i] = best[i].hop
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return out
}

// Owner is the single top choice of hops for key: the same node as
// Pick(key, hops, 1), whatever the order of hops. Removing any other hop
// does not change it, so an address moves only when its owner goes. False
// when hops is empty.
func Owner(key netip.Prefix, hops []netip.Addr) (netip.Addr, bool) {
	// One pass instead of Pick's sort: node agents ask this for every
	// address whenever membership changes.
	b := NewBest(key)
	for _, h := range hops {
		b.Offer(h)
	}
	return b.Owner()
}

// Best is Owner computed as the hops come, for a caller that filters them
// on the way (and would otherwise build a list per key to pass to Owner).
type Best struct {
	seed uint64
	best scored
	ok   bool
}

// NewBest is the choice for key among no hops yet.
func NewBest(key netip.Prefix) Best { return Best{seed: seedOf(key)} }

// Offer adds hop to the hops chosen among.
func (b *Best) Offer(hop netip.Addr) { b.Take(b.Score(hop)) }

// Scored is a hop with its score for one key: scored once (Score), it can
// be offered to every Best of that key (Take).
type Scored struct{ s scored }

// Score is hop scored for b's key.
func (b *Best) Score(hop netip.Addr) Scored { return Scored{scored{score(b.seed, hop), hop}} }

// Take adds a hop scored for b's key (by any Best of that key).
func (b *Best) Take(s Scored) {
	if !b.ok || s.s.compare(b.best) < 0 {
		b.best, b.ok = s.s, true
	}
}

// Owner is Owner(key, the hops offered): false when none was.
func (b *Best) Owner() (netip.Addr, bool) { return b.best.hop, b.ok }

// scored is a hop and its score for one key; lower scores are chosen first,
// and the address breaks a tie so that the order of the input never matters.
type scored struct {
	score uint64
	hop   netip.Addr
}

func (a scored) compare(b scored) int {
	if a.score != b.score {
		return cmp.Compare(a.score, b.score)
	}
	return a.hop.Compare(b.hop)
}

// seedOf hashes the key's address only: keys are host prefixes, and the
// address tells them apart.
func seedOf(key netip.Prefix) uint64 { return fnv64(fnvOffset, key.Addr().As16()) }

func score(seed uint64, hop netip.Addr) uint64 { return mix64(fnv64(seed, hop.As16())) }

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
