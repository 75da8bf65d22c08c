package wire

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/community"
)

// Path attribute type codes (IANA BGP Path Attributes).
const (
	attrOrigin              = 1  // RFC 4271
	attrASPath              = 2  // RFC 4271
	attrNextHop             = 3  // RFC 4271
	attrLocalPref           = 5  // RFC 4271
	attrCommunities         = 8  // RFC 1997
	attrMPReach             = 14 // RFC 4760
	attrMPUnreach           = 15 // RFC 4760
	attrExtendedCommunities = 16 // RFC 4360
	attrAS4Path             = 17 // RFC 6793
	attrLargeCommunities    = 32 // RFC 8092
)

// Attribute flags (RFC 4271 4.3).
const (
	flagOptional   = 0x80
	flagTransitive = 0x40
	flagExtLength  = 0x10

	wellKnown          = flagTransitive
	optionalTransitive = flagOptional | flagTransitive
	optionalNonTrans   = flagOptional
)

// AS_PATH segment types (RFC 4271 4.3), and the most ASNs in a segment.
const (
	asSequence        = 2
	maxSegmentASNs    = 255
	maxAttributeValue = MaxMessageLen
)

// Origin is the ORIGIN attribute's value.
type Origin uint8

// ORIGIN values (RFC 4271 4.3).
const (
	OriginIGP        Origin = 0
	OriginEGP        Origin = 1
	OriginIncomplete Origin = 2
)

// ExtendedCommunity is one extended community (RFC 4360), as sent.
type ExtendedCommunity [8]byte

// LinkBandwidth is the link bandwidth extended community (non-transitive
// two-octet AS specific, type 0x40 sub-type 0x04: a router that gets it
// passes it to no eBGP peer), by which a router weighs its paths to a
// prefix (weighted ECMP); community.ForEndpoints gives the speaker's.
func LinkBandwidth(l community.LinkBandwidth) ExtendedCommunity {
	return ExtendedCommunity(l.Bytes())
}

// Attributes are the path attributes of announced routes, next hop and
// NLRI aside, which are encoded per family.
type Attributes struct {
	Origin Origin
	// ASPath is one AS_SEQUENCE, the speaker's AS (and prepends) on eBGP,
	// empty on iBGP (RFC 4271 5.1.2).
	ASPath []uint32
	// LocalPref is sent when HasLocalPref: on iBGP only (RFC 4271 5.1.5
	// forbids it on eBGP; that is the caller's choice).
	LocalPref    uint32
	HasLocalPref bool
	// The communities are sent in the order given; an empty list sends
	// no attribute (RFC 7606 7.8: a zero-length one is malformed).
	Communities         []community.Community
	ExtendedCommunities []ExtendedCommunity
	LargeCommunities    []community.Large
}

// Options are the encoding choices negotiated on a session for a family.
type Options struct {
	// FourOctetAS: AS numbers in AS_PATH take four octets (RFC 6793).
	FourOctetAS bool
	// AddPath: a four-octet path identifier precedes each NLRI
	// (RFC 7911 3), as negotiated for the family toward the peer.
	AddPath bool
}

// Options are the encoding options for sending f on the session.
func (n *Negotiated) Options(f Family) Options {
	return Options{FourOctetAS: n.FourOctetAS, AddPath: n.SendsAddPath(f)}
}

// appendAttrHeader appends an attribute's flags, type and length; the
// extended length flag (two length octets) only when the value needs it.
func appendAttrHeader(b []byte, flags, typ uint8, n int) []byte {
	if n > 255 {
		// Over 65535 only for more than a message holds, which
		// finishHeader then refuses.
		return binary.BigEndian.AppendUint16(append(b, flags|flagExtLength, typ), uint16(n)) //nolint:gosec // see above
	}
	return append(b, flags, typ, octet(n))
}

// appendTo appends the attributes in ascending type order (RFC 4271 5),
// with NEXT_HOP when nextHop is valid (IPv4 NLRI in the classic field).
func (a *Attributes) appendTo(b []byte, o Options, nextHop netip.Addr) ([]byte, error) {
	if a.Origin > OriginIncomplete {
		return b, fmt.Errorf("origin %d: %w", a.Origin, ErrInvalid)
	}
	if n := max(len(a.ASPath)*4, len(a.Communities)*4, len(a.ExtendedCommunities)*8,
		len(a.LargeCommunities)*12); n > maxAttributeValue {
		return b, fmt.Errorf("attribute of %d bytes: %w", n, ErrTooBig)
	}
	b = append(b, wellKnown, attrOrigin, 1, byte(a.Origin))

	// On a session without four-octet AS, an AS number above 65535 is
	// AS_TRANS in AS_PATH and the real path goes in AS4_PATH.
	as4 := false
	if !o.FourOctetAS {
		for _, asn := range a.ASPath {
			as4 = as4 || asn > 0xffff
		}
	}
	b = appendASPath(b, attrASPath, wellKnown, a.ASPath, o.FourOctetAS)

	if nextHop.IsValid() {
		h := nextHop.As4()
		b = append(b, wellKnown, attrNextHop, 4, h[0], h[1], h[2], h[3])
	}
	if a.HasLocalPref {
		b = append(b, wellKnown, attrLocalPref, 4)
		b = binary.BigEndian.AppendUint32(b, a.LocalPref)
	}
	if len(a.Communities) > 0 {
		b = appendAttrHeader(b, optionalTransitive, attrCommunities, 4*len(a.Communities))
		for _, c := range a.Communities {
			b = binary.BigEndian.AppendUint32(b, uint32(c))
		}
	}
	if len(a.ExtendedCommunities) > 0 {
		b = appendAttrHeader(b, optionalTransitive, attrExtendedCommunities, 8*len(a.ExtendedCommunities))
		for _, c := range a.ExtendedCommunities {
			b = append(b, c[:]...)
		}
	}
	if as4 {
		b = appendASPath(b, attrAS4Path, optionalTransitive, a.ASPath, true)
	}
	if len(a.LargeCommunities) > 0 {
		b = appendAttrHeader(b, optionalTransitive, attrLargeCommunities, 12*len(a.LargeCommunities))
		for _, c := range a.LargeCommunities {
			b = binary.BigEndian.AppendUint32(b, c.Global)
			b = binary.BigEndian.AppendUint32(b, c.Local1)
			b = binary.BigEndian.AppendUint32(b, c.Local2)
		}
	}
	return b, nil
}

// appendASPath appends path as AS_SEQUENCE segments of at most 255 AS
// numbers each, of four octets or two (AS_TRANS for those that do not
// fit). An empty path is an attribute of length zero.
func appendASPath(b []byte, typ, flags uint8, path []uint32, four bool) []byte {
	w := 2
	if four {
		w = 4
	}
	segments := (len(path) + maxSegmentASNs - 1) / maxSegmentASNs
	b = appendAttrHeader(b, flags, typ, 2*segments+w*len(path))
	for rest := path; len(rest) > 0; {
		seg := rest[:min(len(rest), maxSegmentASNs)]
		rest = rest[len(seg):]
		b = append(b, asSequence, octet(len(seg)))
		for _, asn := range seg {
			switch {
			case four:
				b = binary.BigEndian.AppendUint32(b, asn)
			case asn > 0xffff:
				b = binary.BigEndian.AppendUint16(b, ASTrans)
			default:
				b = binary.BigEndian.AppendUint16(b, uint16(asn))
			}
		}
	}
	return b
}
