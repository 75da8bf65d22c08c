package bgp

import (
	"net/netip"
	"slices"
	"sync"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/community"
	"github.com/metal-ccm/metal-ccm/pkg/bgp/wire"
)

// adjOut is one peer's side of the speaker's paths: the prefixes to look
// at again (any goroutine marks them), and what the router has been sent
// on the current session (the peer's sender alone reads and writes it).
// The paths themselves stay in the speaker, once for all peers: a peer
// costs its sent identifiers, not a copy of every path.
type adjOut struct {
	mu    sync.Mutex
	dirty map[netip.Prefix]struct{}
	all   bool          // every prefix, after the session came up or a route refresh
	clear bool          // with all: the router has nothing (a route refresh asked for everything)
	kick  chan struct{} // cap 1: something is marked

	sent map[netip.Prefix]sentPaths
}

// sentPaths are a prefix's paths as the router has them: the next hops,
// sorted, the identifier of each at the same index (the speaker's own
// lists, never modified), and the generation of their attributes.
type sentPaths struct {
	hops []netip.Addr
	ids  []uint32
	gen  uint32
}

func newAdjOut() *adjOut {
	return &adjOut{dirty: map[netip.Prefix]struct{}{}, kick: make(chan struct{}, 1), sent: map[netip.Prefix]sentPaths{}}
}

// mark has the sender look at prefix again.
func (o *adjOut) mark(prefix netip.Prefix) {
	o.mu.Lock()
	o.dirty[prefix] = struct{}{}
	o.mu.Unlock()
	o.poke()
}

func (o *adjOut) poke() {
	select {
	case o.kick <- struct{}{}:
	default:
	}
}

// resendAll has the sender send every path again, as asked by a route
// refresh: what the router was sent counts for nothing.
func (o *adjOut) resendAll() {
	o.mu.Lock()
	o.all, o.clear = true, true
	o.mu.Unlock()
	o.poke()
}

// take returns the marked prefixes and whether all are, and clears them;
// it forgets what was sent when a route refresh asked.
func (o *adjOut) take() (map[netip.Prefix]struct{}, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	d, all := o.dirty, o.all
	if o.clear {
		o.sent = map[netip.Prefix]sentPaths{}
	}
	o.dirty, o.all, o.clear = map[netip.Prefix]struct{}{}, false, false
	return d, all
}

// wanted is what one peer is to have of a prefix.
type wanted struct {
	hops  []netip.Addr
	ids   []uint32
	attrs Attributes
	gen   uint32
}

// wantFor is what peer i is to have of prefix, false for nothing: a host
// prefix's paths with the peer's attributes, or one of the peer's
// aggregates. The caller holds s.mu.
func (s *Speaker) wantFor(i int, prefix netip.Prefix) (wanted, bool) {
	if a := s.aggs[i][prefix]; a != nil {
		if len(a.sent) == 0 {
			return wanted{}, false
		}
		w := wanted{hops: make([]netip.Addr, 0, len(a.sent)), attrs: a.attrs}
		for nh := range a.sent {
			w.hops = append(w.hops, nh)
		}
		slices.SortFunc(w.hops, netip.Addr.Compare)
		w.ids = make([]uint32, len(w.hops))
		for k, nh := range w.hops {
			w.ids[k] = a.sent[nh]
		}
		return w, true
	}
	pp, ok := s.paths[prefix]
	if !ok || len(pp.hops) == 0 {
		return wanted{}, false
	}
	attrs, ok := s.hostAttrs(i, prefix)
	if !ok {
		return wanted{}, false
	}
	return wanted{hops: pp.hops, ids: pp.ids, attrs: attrs, gen: s.gens[prefix]}, true
}

// prefixesFor are every prefix peer i may have: the host prefixes and its
// aggregates. The caller holds s.mu.
func (s *Speaker) prefixesFor(i int) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(s.paths)+len(s.aggs[i]))
	for p := range s.paths {
		out = append(out, p)
	}
	for p := range s.aggs[i] {
		out = append(out, p)
	}
	return out
}

// announcement is one path to send.
type announcement struct {
	key  groupKey
	set  community.Set
	nlri wire.NLRI
}

// groupKey is what the paths sent in one UPDATE share: the next hop and
// the attributes (the prefix's communities and local preference, the
// path's link bandwidth).
type groupKey struct {
	hop         netip.Addr
	communities string
	localPref   uint32
	endpoints   int
}

// diff appends to ann and wd what the router must be sent for prefix to go
// from sent to want (ok false: nothing wanted), and returns the new sent
// state (ok false: none). Without ADD-PATH (addPath false) the router
// takes one path per prefix: the first next hop's, without identifier.
func diff(prefix netip.Prefix, sent sentPaths, had bool, want wanted, ok, addPath bool, ann []announcement, wd []wire.NLRI) ([]announcement, []wire.NLRI, sentPaths, bool) {
	if ok && !addPath {
		want.hops, want.ids = want.hops[:1], []uint32{0}
	}
	if !ok {
		if had {
			for _, id := range sent.ids {
				wd = append(wd, wire.NLRI{Prefix: prefix, ID: id})
			}
		}
		return ann, wd, sentPaths{}, false
	}
	comms := ""
	if !want.attrs.Communities.Empty() {
		comms = want.attrs.Communities.String()
	}
	resendAll := !had || sent.gen != want.gen
	for k, nh := range want.hops {
		if !resendAll {
			if at, in := slices.BinarySearchFunc(sent.hops, nh, netip.Addr.Compare); in && sent.ids[at] == want.ids[k] {
				continue
			}
		}
		key := groupKey{hop: nh, communities: comms, localPref: want.attrs.LocalPref, endpoints: want.attrs.weights[nh]}
		if want.attrs.nextHopSelf {
			key.hop = netip.Addr{} // the session's own address (encodeAnnouncements)
		}
		ann = append(ann, announcement{
			key:  key,
			set:  want.attrs.Communities,
			nlri: wire.NLRI{Prefix: prefix, ID: want.ids[k]},
		})
	}
	if had {
		for k, nh := range sent.hops {
			at, in := slices.BinarySearchFunc(want.hops, nh, netip.Addr.Compare)
			if in && want.ids[at] == sent.ids[k] {
				continue
			}
			if !addPath && len(want.hops) > 0 {
				continue // the one path was replaced by the new one
			}
			wd = append(wd, wire.NLRI{Prefix: prefix, ID: sent.ids[k]})
		}
	}
	return ann, wd, sentPaths{hops: want.hops, ids: want.ids, gen: want.gen}, true
}

// wireAttributes are the attributes of a group's paths on a session from
// AS local to AS peer.
func wireAttributes(k groupKey, set community.Set, local, peer uint32) wire.Attributes {
	a := wire.Attributes{Origin: wire.OriginIGP, Communities: set.Standard, LargeCommunities: set.Large}
	if local != peer {
		a.ASPath = []uint32{local}
	} else {
		a.LocalPref, a.HasLocalPref = k.localPref, true
		if a.LocalPref == 0 {
			a.LocalPref = 100
		}
	}
	if k.endpoints > 0 {
		a.ExtendedCommunities = []wire.ExtendedCommunity{wire.LinkBandwidth(community.ForEndpoints(local, k.endpoints))}
	}
	return a
}
