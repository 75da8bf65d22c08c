package bgp

import (
	"net/netip"
	"slices"
)

// aggregate is a covering prefix announced to one peer: its next hops are
// those of the host prefixes it covers.
type aggregate struct {
	attrs Attributes
	// want counts, per next hop, the host prefixes with that next hop that
	// it covers (in Speaker.paths, sent to this peer with this aggregate).
	want map[netip.Addr]int
	// sent are its paths: next hop -> path identifier.
	sent map[netip.Addr]uint32
}

// countHop records that host prefix got (delta 1) or lost (-1) next hop
// nh, for every peer whose advertisement aggregates it, and returns the
// aggregates whose wanted next hops changed. The caller holds s.mu.
func (s *Speaker) countHop(prefix netip.Prefix, nh netip.Addr, delta int) []aggKey {
	var changed []aggKey
	for i := range s.cfg.Peers {
		ad := s.advertisementFor(i, prefix)
		if ad == nil || ad.aggregateLen(prefix) == 0 {
			continue
		}
		agg := netip.PrefixFrom(prefix.Addr(), ad.aggregateLen(prefix)).Masked()
		if s.aggs[i] == nil {
			s.aggs[i] = map[netip.Prefix]*aggregate{}
		}
		a := s.aggs[i][agg]
		if a == nil {
			attrs := ad.Attributes
			attrs.nextHopSelf = s.cfg.Peers[i].NextHopSelf
			a = &aggregate{attrs: attrs, want: map[netip.Addr]int{}, sent: map[netip.Addr]uint32{}}
			s.aggs[i][agg] = a
		}
		before := a.want[nh]
		a.want[nh] += delta
		if a.want[nh] <= 0 {
			delete(a.want, nh)
		}
		if (before > 0) != (a.want[nh] > 0) {
			changed = append(changed, aggKey{i, agg})
		}
	}
	return changed
}

// aggKey is one peer's aggregate.
type aggKey struct {
	peer   int
	prefix netip.Prefix
}

// syncAggregate gives one peer's aggregate a path identifier for each next
// hop it wants and drops those it no longer wants (sent: the paths the
// aggregate has), and has the peer's session send what changed. The
// caller holds s.mu.
func (s *Speaker) syncAggregate(k aggKey) {
	a := s.aggs[k.peer][k.prefix]
	if a == nil {
		return
	}
	used := make(map[uint32]bool, len(a.sent))
	for _, id := range a.sent {
		used[id] = true
	}
	hops := make([]netip.Addr, 0, len(a.want))
	for nh := range a.want {
		hops = append(hops, nh)
	}
	slices.SortFunc(hops, netip.Addr.Compare)
	for _, nh := range hops {
		if _, ok := a.sent[nh]; ok {
			continue
		}
		id := pathID(nh, used)
		used[id] = true
		a.sent[nh] = id
	}
	for nh := range a.sent {
		if a.want[nh] <= 0 {
			delete(a.sent, nh)
		}
	}
	if k.peer < len(s.peers) {
		s.peers[k.peer].out.mark(k.prefix)
	}
	if len(a.want) == 0 && len(a.sent) == 0 {
		delete(s.aggs[k.peer], k.prefix)
	}
}
