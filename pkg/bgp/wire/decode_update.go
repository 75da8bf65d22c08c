package wire

import (
	"encoding/binary"
	"fmt"
)

// UpdateInfo is what the speaker learns from a router's UPDATE: it
// accepts no routes, so only whether the UPDATE is an End-of-RIB marker,
// and counts for its logs and metrics.
type UpdateInfo struct {
	// EndOfRIB: the UPDATE is the End-of-RIB marker of Family
	// (RFC 4724 2).
	EndOfRIB bool
	Family   Family
	// Withdrawn and Reach count NLRI, classic and multiprotocol, of the
	// families the decoder can read (IPv4 and IPv6 unicast).
	Withdrawn int
	Reach     int
	// Attributes counts the path attributes, the MP ones included.
	Attributes int
}

// DecodeUpdate reads a router's UPDATE body (after the header), checking
// every length in it: the withdrawn routes and attributes fields, each
// attribute, and each prefix of the families it can read. addPath are the
// families in which the router sends path identifiers (negotiated
// receive). Malformed input gives an error wrapping ErrLength,
// ErrTruncated or ErrMalformed.
func DecodeUpdate(body []byte, addPath []Family) (UpdateInfo, error) {
	var info UpdateInfo
	if len(body) < 4 {
		return info, fmt.Errorf("update: %d bytes: %w", len(body), ErrTruncated)
	}
	wl := int(binary.BigEndian.Uint16(body))
	if wl > len(body)-4 {
		return info, fmt.Errorf("update: withdrawn routes of %d bytes in %d: %w", wl, len(body)-4, ErrLength)
	}
	v4AddPath := hasFamily(addPath, IPv4Unicast)
	n, err := countNLRI(body[2:2+wl], 32, v4AddPath)
	if err != nil {
		return info, fmt.Errorf("update: withdrawn routes: %w", err)
	}
	info.Withdrawn += n
	rest := body[2+wl:]
	al := int(binary.BigEndian.Uint16(rest))
	if al > len(rest)-2 {
		return info, fmt.Errorf("update: attributes of %d bytes in %d: %w", al, len(rest)-2, ErrLength)
	}
	attrs, nlri := rest[2:2+al], rest[2+al:]
	var mpReach, mpUnreach int
	var eorFamily Family
	for len(attrs) > 0 {
		if len(attrs) < 3 {
			return info, fmt.Errorf("update: attribute header: %w", ErrTruncated)
		}
		flags, typ := attrs[0], attrs[1]
		var l int
		if flags&flagExtLength != 0 {
			if len(attrs) < 4 {
				return info, fmt.Errorf("update: attribute %d header: %w", typ, ErrTruncated)
			}
			l, attrs = int(binary.BigEndian.Uint16(attrs[2:])), attrs[4:]
		} else {
			l, attrs = int(attrs[2]), attrs[3:]
		}
		if l > len(attrs) {
			return info, fmt.Errorf("update: attribute %d of %d bytes, %d left: %w", typ, l, len(attrs), ErrLength)
		}
		v := attrs[:l]
		attrs = attrs[l:]
		info.Attributes++
		switch typ {
		case attrMPReach:
			mpReach++
			n, err := countMPReach(v, addPath)
			if err != nil {
				return info, fmt.Errorf("update: MP_REACH_NLRI: %w", err)
			}
			info.Reach += n
		case attrMPUnreach:
			mpUnreach++
			if len(v) < 3 {
				return info, fmt.Errorf("update: MP_UNREACH_NLRI of %d bytes: %w", len(v), ErrLength)
			}
			f := Family{AFI: binary.BigEndian.Uint16(v), SAFI: v[2]}
			eorFamily = f
			if bits := f.addrBits(); bits != 0 {
				n, err := countNLRI(v[3:], bits, hasFamily(addPath, f))
				if err != nil {
					return info, fmt.Errorf("update: MP_UNREACH_NLRI: %w", err)
				}
				info.Withdrawn += n
			}
		}
	}
	if mpReach > 1 || mpUnreach > 1 {
		// RFC 7606 3 g: more than one of either resets the session.
		return info, fmt.Errorf("update: %d MP_REACH_NLRI, %d MP_UNREACH_NLRI: %w", mpReach, mpUnreach, ErrMalformed)
	}
	n, err = countNLRI(nlri, 32, v4AddPath)
	if err != nil {
		return info, fmt.Errorf("update: NLRI: %w", err)
	}
	info.Reach += n
	switch {
	case len(body) == 4:
		info.EndOfRIB, info.Family = true, IPv4Unicast
	case wl == 0 && len(nlri) == 0 && info.Attributes == 1 && mpUnreach == 1 && al <= 4+3 && info.Withdrawn == 0:
		// Only an MP_UNREACH_NLRI, with AFI and SAFI alone (its
		// header may have the extended length flag set).
		if al == 3+3 || (al == 4+3 && rest[2]&flagExtLength != 0) {
			info.EndOfRIB, info.Family = true, eorFamily
		}
	}
	return info, nil
}

// countMPReach checks an MP_REACH_NLRI value: next hop length within it,
// the reserved octet, and the NLRI of a family it can read.
func countMPReach(v []byte, addPath []Family) (int, error) {
	if len(v) < 5 {
		return 0, fmt.Errorf("%d bytes: %w", len(v), ErrLength)
	}
	f := Family{AFI: binary.BigEndian.Uint16(v), SAFI: v[2]}
	nh := int(v[3])
	if 4+nh+1 > len(v) {
		return 0, fmt.Errorf("next hop of %d bytes in %d: %w", nh, len(v)-5, ErrLength)
	}
	bits := f.addrBits()
	if bits == 0 {
		return 0, nil // a family the speaker does not read: skipped whole
	}
	if nh != 4 && nh != 16 && nh != 32 {
		// IPv4 (RFC 4760), IPv6 (RFC 2545, RFC 8950), or global and
		// link-local.
		return 0, fmt.Errorf("next hop of %d bytes: %w", nh, ErrMalformed)
	}
	return countNLRI(v[4+nh+1:], bits, hasFamily(addPath, f))
}

// countNLRI walks a run of prefixes of bits-long addresses, checking each
// one's length and bytes, and counts them.
func countNLRI(b []byte, bits int, addPath bool) (int, error) {
	n := 0
	for len(b) > 0 {
		if addPath {
			if len(b) < 4 {
				return n, fmt.Errorf("path identifier: %w", ErrTruncated)
			}
			b = b[4:]
		}
		if len(b) < 1 {
			return n, fmt.Errorf("prefix length: %w", ErrTruncated)
		}
		l := int(b[0])
		if l > bits {
			return n, fmt.Errorf("prefix length %d over %d: %w", l, bits, ErrMalformed)
		}
		k := (l + 7) / 8
		if len(b) < 1+k {
			return n, fmt.Errorf("prefix of %d bits, %d bytes left: %w", l, len(b)-1, ErrTruncated)
		}
		b = b[1+k:]
		n++
	}
	return n, nil
}
