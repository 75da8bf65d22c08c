package bgp

import (
	"fmt"
	"net"
	"net/netip"
	"slices"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/session"
	"github.com/metal-ccm/metal-ccm/pkg/bgp/wire"
)

// flushChunk is how many prefixes a flush takes under the speaker's lock
// at a time, so that SetPaths never waits long for a sender.
const flushChunk = 1024

// writeAt is the size of encoded UPDATEs written at once.
const writeAt = 256 << 10

// flush sends peer i's router what changed of the marked prefixes (all of
// them after markAll): new paths first, then withdrawals, per chunk; with
// eor, an End-of-RIB per family after them.
func (s *Speaker) flush(i int, o *adjOut, sess *session.Session, eor bool) error {
	neg := sess.Negotiated()
	dirty, all := o.take()
	var prefixes []netip.Prefix
	if all {
		s.mu.Lock()
		prefixes = s.prefixesFor(i)
		s.mu.Unlock()
		for p := range o.sent {
			prefixes = append(prefixes, p)
		}
		slices.SortFunc(prefixes, netip.Prefix.Compare)
		prefixes = slices.Compact(prefixes)
	} else {
		prefixes = make([]netip.Prefix, 0, len(dirty))
		for p := range dirty {
			prefixes = append(prefixes, p)
		}
	}
	var buf []byte
	for len(prefixes) > 0 {
		n := min(len(prefixes), flushChunk)
		chunk := prefixes[:n]
		prefixes = prefixes[n:]
		type item struct {
			want wanted
			ok   bool
		}
		wants := make([]item, len(chunk))
		s.mu.Lock()
		for k, p := range chunk {
			wants[k].want, wants[k].ok = s.wantFor(i, p)
		}
		s.mu.Unlock()
		var ann [2][]announcement // by family: IPv4, IPv6
		var wd [2][]wire.NLRI
		for k, p := range chunk {
			fi, f := familyIndex(p)
			ok := wants[k].ok && neg.Has(f)
			sent, had := o.sent[p]
			var next sentPaths
			var keep bool
			ann[fi], wd[fi], next, keep = diff(p, sent, had, wants[k].want, ok, neg.AddPath[f], ann[fi], wd[fi])
			if keep {
				o.sent[p] = next
			} else {
				delete(o.sent, p)
			}
		}
		var err error
		for fi := range 2 {
			if buf, err = s.encodeAnnouncements(buf, sess, s.cfg.Peers[i].ASN, fi, ann[fi]); err != nil {
				return err
			}
		}
		for fi := range 2 {
			wf := wireFamily(fi)
			if buf, err = wire.AppendWithdraw(buf, wf, wd[fi], neg.Options(wf)); err != nil {
				return fmt.Errorf("encode withdrawals: %w", err)
			}
		}
		if len(buf) >= writeAt {
			if err := sess.SendRaw(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	if eor {
		for fi := range 2 {
			if wf := wireFamily(fi); neg.Has(wf) {
				buf = wire.AppendEndOfRIB(buf, wf)
			}
		}
	}
	if len(buf) > 0 {
		return sess.SendRaw(buf)
	}
	return nil
}

// encodeAnnouncements appends the UPDATEs of ann (family index fi),
// grouped by next hop and attributes, as few as hold them.
func (s *Speaker) encodeAnnouncements(buf []byte, sess *session.Session, peerASN uint32, fi int, ann []announcement) ([]byte, error) {
	if len(ann) == 0 {
		return buf, nil
	}
	neg := sess.Negotiated()
	wf := wireFamily(fi)
	opts := neg.Options(wf)
	slices.SortStableFunc(ann, func(a, b announcement) int { return compareKeys(a.key, b.key) })
	for len(ann) > 0 {
		k := 1
		for k < len(ann) && ann[k].key == ann[0].key {
			k++
		}
		nlri := make([]wire.NLRI, k)
		for j := range k {
			nlri[j] = ann[j].nlri
		}
		attrs := wireAttributes(ann[0].key, ann[0].set, s.cfg.ASN, peerASN)
		hop, ll := ann[0].key.hop, netip.Addr{}
		if !hop.IsValid() {
			hop, ll = selfHop(sess, fi)
		}
		pk, err := wire.NewPacker(wf, &attrs, hop, ll, opts)
		if err != nil {
			return buf, fmt.Errorf("encode paths via %s: %w", ann[0].key.hop, err)
		}
		if buf, err = pk.Announce(buf, nlri); err != nil {
			return buf, fmt.Errorf("encode paths via %s: %w", ann[0].key.hop, err)
		}
		ann = ann[k:]
	}
	return buf, nil
}

func compareKeys(a, b groupKey) int {
	if c := a.hop.Compare(b.hop); c != 0 {
		return c
	}
	if a.communities != b.communities {
		if a.communities < b.communities {
			return -1
		}
		return 1
	}
	if a.localPref != b.localPref {
		return int(int64(a.localPref) - int64(b.localPref))
	}
	return a.endpoints - b.endpoints
}

// familyIndex is prefix's family: its index in a flush (0 IPv4, 1 IPv6),
// and the family.
func familyIndex(p netip.Prefix) (int, wire.Family) {
	if p.Addr().Is4() {
		return 0, wire.IPv4Unicast
	}
	return 1, wire.IPv6Unicast
}

// wireFamily is the family of index fi.
func wireFamily(fi int) wire.Family {
	if fi == 0 {
		return wire.IPv4Unicast
	}
	return wire.IPv6Unicast
}

// selfHop is the next hop of a path sent as from the session's own address
// (Peer.NextHopSelf), for family index fi: that address in its own family;
// on a link-local session, the link-local address for both families (IPv4
// with an IPv6 next hop, RFC 8950), in both fields of an IPv6 next hop.
func selfHop(sess *session.Session, fi int) (hop, linkLocal netip.Addr) {
	local := netip.Addr{}
	if a, ok := sess.LocalAddress().(*net.TCPAddr); ok {
		local = a.AddrPort().Addr().Unmap()
	}
	if local.Is6() && local.IsLinkLocalUnicast() {
		return local.WithZone(""), local.WithZone("")
	}
	return local, netip.Addr{}
}
