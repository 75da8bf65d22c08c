package wire

import (
	"fmt"
	"net/netip"
)

// updateFixedLen is an UPDATE's length before attributes and NLRI: the
// header, and the withdrawn routes and total path attribute lengths.
const updateFixedLen = HeaderLen + 2 + 2

// Packer encodes announcements of many routes that share attributes and
// next hop into as few UPDATEs as hold them: the attributes are encoded
// once, and each message takes as many NLRI as fit in MaxMessageLen. A
// speaker groups a peer's routes by attributes and packs each group,
// which is what keeps the number of messages (and system calls) low.
type Packer struct {
	family  Family
	addPath bool
	bits    int
	mpHead  []byte // MP_REACH_NLRI up to its NLRI; nil for classic NLRI
	attrs   []byte
}

// NewPacker prepares the encoding of routes of family f with attrs to
// nextHop (and the optional link-local second next hop of an IPv6 one),
// with the session's options for f. See Update for where the routes go.
func NewPacker(f Family, attrs *Attributes, nextHop, linkLocal netip.Addr, o Options) (*Packer, error) {
	p := &Packer{family: f, addPath: o.AddPath, bits: f.addrBits()}
	if p.bits == 0 {
		return nil, fmt.Errorf("packer: family %v: %w", f, ErrInvalid)
	}
	mp, err := mpNextHop(f, nextHop, linkLocal)
	if err != nil {
		return nil, fmt.Errorf("packer: %w", err)
	}
	classicHop := netip.Addr{}
	if mp == nil {
		classicHop = nextHop
	}
	p.mpHead = mp
	if p.attrs, err = attrs.appendTo(nil, o, classicHop); err != nil {
		return nil, fmt.Errorf("packer: %w", err)
	}
	if p.overhead(0) >= MaxMessageLen-nlriLen(netip.PrefixFrom(netip.IPv6Unspecified(), 128), true) {
		return nil, fmt.Errorf("packer: attributes of %d bytes: %w", len(p.attrs), ErrTooBig)
	}
	return p, nil
}

// overhead is a message's length before its NLRI, for NLRI of n bytes:
// with MP_REACH_NLRI its header grows by an octet past 255 bytes.
func (p *Packer) overhead(n int) int {
	o := updateFixedLen + len(p.attrs)
	if p.mpHead != nil {
		v := len(p.mpHead) + n
		o += len(p.mpHead) + 3
		if v > 255 {
			o++
		}
	}
	return o
}

// Announce appends to b the UPDATEs announcing nlri, one after another as
// they go on the wire, in the order given. On error (a prefix of another
// family) b is returned as it was.
func (p *Packer) Announce(b []byte, nlri []NLRI) ([]byte, error) {
	start := len(b)
	for len(nlri) > 0 {
		k, n := 0, 0
		for k < len(nlri) {
			if err := checkPrefix(nlri[k].Prefix, p.bits); err != nil {
				return b[:start], fmt.Errorf("packer: %w", err)
			}
			l := nlriLen(nlri[k].Prefix, p.addPath)
			if p.overhead(n+l)+n+l > MaxMessageLen {
				break
			}
			k, n = k+1, n+l
		}
		u := updateParts{family: p.family, addPath: p.addPath, attrs: p.attrs}
		if p.mpHead != nil {
			u.reach, u.mpHead = nlri[:k], p.mpHead
		} else {
			u.nlri = nlri[:k]
		}
		var err error
		if b, err = u.appendTo(b); err != nil {
			return b[:start], fmt.Errorf("packer: %w", err)
		}
		nlri = nlri[k:]
	}
	return b, nil
}

// AppendWithdraw appends to b the UPDATEs withdrawing nlri of family f,
// as few as hold them: the classic withdrawn routes field for IPv4
// unicast, MP_UNREACH_NLRI for others. Nothing is appended for no nlri
// (an empty one would be an End-of-RIB).
func AppendWithdraw(b []byte, f Family, nlri []NLRI, o Options) ([]byte, error) {
	bits := f.addrBits()
	if bits == 0 {
		return b, fmt.Errorf("withdraw: family %v: %w", f, ErrInvalid)
	}
	start := len(b)
	// The room for NLRI: MP_UNREACH_NLRI takes its header (extended
	// length, as a full message's is past 255 bytes) and AFI/SAFI.
	room := MaxMessageLen - updateFixedLen
	if f != IPv4Unicast {
		room -= 4 + 3
	}
	for len(nlri) > 0 {
		k, n := 0, 0
		for k < len(nlri) {
			if err := checkPrefix(nlri[k].Prefix, bits); err != nil {
				return b[:start], fmt.Errorf("withdraw: %w", err)
			}
			l := nlriLen(nlri[k].Prefix, o.AddPath)
			if n+l > room {
				break
			}
			k, n = k+1, n+l
		}
		u := updateParts{family: f, addPath: o.AddPath}
		if f == IPv4Unicast {
			u.withdrawn = nlri[:k]
		} else {
			u.unreach, u.hasUnreach = nlri[:k], true
		}
		var err error
		if b, err = u.appendTo(b); err != nil {
			return b[:start], fmt.Errorf("withdraw: %w", err)
		}
		nlri = nlri[k:]
	}
	return b, nil
}
