package wire

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// NLRI is a prefix with its path identifier, sent only when ADD-PATH is
// negotiated for the family (RFC 7911 3).
type NLRI struct {
	Prefix netip.Prefix
	ID     uint32
}

// Update is one UPDATE message of one family (RFC 4271 4.3, RFC 4760).
// Where things go depends on the family and next hop:
//   - IPv4 unicast with an IPv4 next hop: the classic withdrawn routes and
//     NLRI fields, with a NEXT_HOP attribute;
//   - IPv4 unicast with an IPv6 next hop (RFC 8950, when negotiated):
//     MP_REACH_NLRI for the announced routes, the classic field for the
//     withdrawn ones;
//   - IPv6 unicast: MP_REACH_NLRI and MP_UNREACH_NLRI.
//
// An Update with nothing in it is the family's End-of-RIB marker.
type Update struct {
	Family    Family
	Withdrawn []NLRI
	Reach     []NLRI
	// Attrs are the announced routes' attributes, needed with Reach.
	Attrs *Attributes
	// NextHop of the announced routes; LinkLocalNextHop is the optional
	// second, link-local next hop of an IPv6 one (RFC 2545 3).
	NextHop          netip.Addr
	LinkLocalNextHop netip.Addr
	Options
}

// AppendTo appends the UPDATE to b, or returns ErrTooBig (b unchanged)
// if it does not fit in MaxMessageLen: Packer splits many routes over
// messages.
func (m *Update) AppendTo(b []byte) ([]byte, error) {
	bits := m.Family.addrBits()
	if bits == 0 {
		return b, fmt.Errorf("update: family %v: %w", m.Family, ErrInvalid)
	}
	u := updateParts{family: m.Family, addPath: m.AddPath}
	if m.Family == IPv4Unicast {
		u.withdrawn = m.Withdrawn
	} else {
		u.unreach, u.hasUnreach = m.Withdrawn, len(m.Withdrawn) > 0
	}
	if len(m.Reach) > 0 {
		if m.Attrs == nil {
			return b, fmt.Errorf("update: routes without attributes: %w", ErrInvalid)
		}
		mp, err := mpNextHop(m.Family, m.NextHop, m.LinkLocalNextHop)
		if err != nil {
			return b, fmt.Errorf("update: %w", err)
		}
		var scratch [512]byte
		classicHop := netip.Addr{}
		if mp == nil {
			classicHop = m.NextHop
			u.nlri = m.Reach
		} else {
			u.reach, u.mpHead = m.Reach, mp
		}
		u.attrs, err = m.Attrs.appendTo(scratch[:0], m.Options, classicHop)
		if err != nil {
			return b, fmt.Errorf("update: %w", err)
		}
	}
	if len(m.Withdrawn) == 0 && len(m.Reach) == 0 && m.Family != IPv4Unicast {
		u.hasUnreach = true // End-of-RIB
	}
	return u.appendTo(b)
}

// AppendEndOfRIB appends the End-of-RIB marker of f (RFC 4724 2): an
// UPDATE with nothing in it for IPv4 unicast, one with only an empty
// MP_UNREACH_NLRI of the family for others.
func AppendEndOfRIB(b []byte, f Family) []byte {
	u := updateParts{family: f, hasUnreach: f != IPv4Unicast}
	b, _ = u.appendTo(b) // a few bytes
	return b
}

// mpNextHop is the next hop part of MP_REACH_NLRI for routes of f to hop
// (AFI, SAFI, length, next hops, reserved octet), or nil when they go in
// the classic fields with NEXT_HOP.
func mpNextHop(f Family, hop, linkLocal netip.Addr) ([]byte, error) {
	switch {
	case f == IPv4Unicast && hop.Is4() && !linkLocal.IsValid():
		if hop.IsUnspecified() {
			return nil, fmt.Errorf("next hop %v: %w", hop, ErrInvalid)
		}
		return nil, nil
	case !hop.Is6() || hop.Is4In6():
		return nil, fmt.Errorf("next hop %v for %v: %w", hop, f, ErrInvalid)
	case linkLocal.IsValid() && (!linkLocal.Is6() || !linkLocal.IsLinkLocalUnicast()):
		return nil, fmt.Errorf("link-local next hop %v: %w", linkLocal, ErrInvalid)
	}
	n := 16
	if linkLocal.IsValid() {
		n = 32
	}
	b := make([]byte, 0, 5+n)
	b = binary.BigEndian.AppendUint16(b, f.AFI)
	b = append(b, f.SAFI, byte(n))
	h := hop.As16() // zones are left out: not on the wire
	b = append(b, h[:]...)
	if linkLocal.IsValid() {
		l := linkLocal.As16()
		b = append(b, l[:]...)
	}
	return append(b, 0), nil // reserved (RFC 4760 3)
}

// updateParts is an UPDATE laid out: what goes in the classic fields, in
// the MP attributes, and the other attributes already encoded.
type updateParts struct {
	family     Family
	addPath    bool
	withdrawn  []NLRI // classic withdrawn routes (IPv4 unicast)
	unreach    []NLRI // MP_UNREACH_NLRI, when hasUnreach
	hasUnreach bool
	reach      []NLRI // MP_REACH_NLRI, when mpHead is set
	mpHead     []byte // MP_REACH_NLRI up to its NLRI
	attrs      []byte // the other attributes
	nlri       []NLRI // classic NLRI (IPv4 unicast)
}

// appendTo appends the UPDATE. MP_REACH_NLRI and MP_UNREACH_NLRI go
// before the other attributes: RFC 7606 5.1 asks for them first, so that a
// receiver can find the NLRI even when it must treat the other attributes
// as withdrawn, which overrides RFC 4271's ascending order for them.
func (u *updateParts) appendTo(b []byte) ([]byte, error) {
	b, start := appendHeader(b, TypeUpdate)
	bits := u.family.addrBits()
	var err error
	fail := func(e error) ([]byte, error) { return b[:start], fmt.Errorf("update: %w", e) }

	at := len(b)
	b = append(b, 0, 0)
	if b, err = appendNLRIs(b, u.withdrawn, 32, u.addPath); err != nil {
		return fail(err)
	}
	if n := len(b) - at - 2; n > MaxMessageLen {
		return fail(fmt.Errorf("withdrawn routes of %d bytes: %w", n, ErrTooBig))
	} else {
		binary.BigEndian.PutUint16(b[at:], uint16(n)) //nolint:gosec // n <= MaxMessageLen
	}

	at = len(b)
	b = append(b, 0, 0)
	if u.mpHead != nil {
		n, err := nlrisLen(u.reach, bits, u.addPath)
		if err != nil {
			return fail(err)
		}
		b = appendAttrHeader(b, optionalNonTrans, attrMPReach, len(u.mpHead)+n)
		b = append(b, u.mpHead...)
		b, _ = appendNLRIs(b, u.reach, bits, u.addPath) // checked by nlrisLen
	}
	if u.hasUnreach {
		n, err := nlrisLen(u.unreach, bits, u.addPath)
		if err != nil {
			return fail(err)
		}
		b = appendAttrHeader(b, optionalNonTrans, attrMPUnreach, 3+n)
		b = binary.BigEndian.AppendUint16(b, u.family.AFI)
		b = append(b, u.family.SAFI)
		b, _ = appendNLRIs(b, u.unreach, bits, u.addPath)
	}
	b = append(b, u.attrs...)
	if n := len(b) - at - 2; n > MaxMessageLen {
		return fail(fmt.Errorf("attributes of %d bytes: %w", n, ErrTooBig))
	} else {
		binary.BigEndian.PutUint16(b[at:], uint16(n)) //nolint:gosec // n <= MaxMessageLen
	}
	if b, err = appendNLRIs(b, u.nlri, 32, u.addPath); err != nil {
		return fail(err)
	}
	return finishHeader(b, start)
}

// nlriLen is the encoded length of one NLRI: path identifier, length
// octet, and the prefix's significant octets (RFC 4271 4.3).
func nlriLen(p netip.Prefix, addPath bool) int {
	n := 1 + (p.Bits()+7)/8
	if addPath {
		n += 4
	}
	return n
}

// nlrisLen is the encoded length of nlri, checking that each prefix is of
// the family (bits its address length).
func nlrisLen(nlri []NLRI, bits int, addPath bool) (int, error) {
	n := 0
	for _, r := range nlri {
		if err := checkPrefix(r.Prefix, bits); err != nil {
			return 0, err
		}
		n += nlriLen(r.Prefix, addPath)
	}
	return n, nil
}

func checkPrefix(p netip.Prefix, bits int) error {
	if !p.IsValid() || p.Addr().BitLen() != bits || p.Addr().Zone() != "" {
		return fmt.Errorf("prefix %v: %w", p, ErrInvalid)
	}
	return nil
}

// appendNLRIs appends each prefix with only its significant octets, the
// bits past its length zero.
func appendNLRIs(b []byte, nlri []NLRI, bits int, addPath bool) ([]byte, error) {
	for _, r := range nlri {
		if err := checkPrefix(r.Prefix, bits); err != nil {
			return b, err
		}
		if addPath {
			b = binary.BigEndian.AppendUint32(b, r.ID)
		}
		p := r.Prefix.Masked()
		n := (p.Bits() + 7) / 8
		b = append(b, octet(p.Bits()))
		if bits == 32 {
			a := p.Addr().As4()
			b = append(b, a[:n]...)
		} else {
			a := p.Addr().As16()
			b = append(b, a[:n]...)
		}
	}
	return b, nil
}
