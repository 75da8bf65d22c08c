package bgp

import (
	"net/netip"
	"slices"

	"github.com/osrg/gobgp/v4/pkg/server"
)

// aggregate is a covering prefix announced to one peer: its next hops are
// those of the host prefixes it covers.
type aggregate struct {
	attrs Attributes
	// want counts, per next hop, the host prefixes with that next hop that
	// it covers (in Speaker.paths, sent to this peer with this aggregate).
	want map[netip.Addr]int
	// sent are the paths GoBGP has: next hop -> path identifier.
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

// syncAggregate makes GoBGP's paths of one peer's aggregate equal to the
// next hops it wants, when the speaker runs: new paths first, then
// withdrawals. What failed stays different and is sent by the next sync of
// the aggregate. The caller holds s.mu.
func (s *Speaker) syncAggregate(k aggKey) error {
	a := s.aggs[k.peer][k.prefix]
	if a == nil || s.servers == nil {
		return nil
	}
	if err := sendAggregate(s.servers[k.peer], k.prefix, a); err != nil {
		return err
	}
	if len(a.want) == 0 && len(a.sent) == 0 {
		delete(s.aggs[k.peer], k.prefix)
	}
	return nil
}

// sendAggregate sends srv what changed of aggregate a: new paths first,
// in one call, then withdrawals, in another.
func sendAggregate(srv *server.BgpServer, prefix netip.Prefix, a *aggregate) error {
	used := make(map[uint32]bool, len(a.sent))
	for _, id := range a.sent {
		used[id] = true
	}
	hops := make([]netip.Addr, 0, len(a.want))
	for nh := range a.want {
		hops = append(hops, nh)
	}
	slices.SortFunc(hops, netip.Addr.Compare)
	var add hopPaths
	for _, nh := range hops {
		if _, ok := a.sent[nh]; ok {
			continue
		}
		id := pathID(nh, used)
		used[id] = true
		add = append(add, hopPath{nh, id})
	}
	if err := addPaths(srv, prefix, add, a.attrs); err != nil {
		return err
	}
	for _, h := range add {
		a.sent[h.hop] = h.id
	}
	var gone hopPaths
	for nh, id := range a.sent {
		if a.want[nh] <= 0 {
			gone = append(gone, hopPath{nh, id})
		}
	}
	if err := deletePaths(srv, prefix, gone); err != nil {
		return err
	}
	for _, h := range gone {
		delete(a.sent, h.hop)
	}
	return nil
}
