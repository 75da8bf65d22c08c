package community

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Link bandwidth extended community (RFC 10005, formerly
// draft-ietf-idr-link-bandwidth): a path's share of the traffic when a
// router spreads a prefix over several paths (weighted ECMP).
const (
	// LinkBandwidthType is the non-transitive two-octet-AS-specific
	// extended community type: the community stays with the router that
	// gets it, which never passes it to its own eBGP peers.
	LinkBandwidthType = 0x40
	// LinkBandwidthSubtype is the link bandwidth sub-type.
	LinkBandwidthSubtype = 0x04
	// ASTrans is the two-octet AS number written for a four-octet one
	// (RFC 6793): the community has room for two octets only.
	ASTrans = 23456
	// EndpointBytesPerSecond is the bandwidth one ready endpoint counts
	// for: 1 Mbit/s, so that FRR shows a node with 3 endpoints as
	// "3.000 Mbps". Only the ratios between paths matter to a router.
	EndpointBytesPerSecond = 125_000
	// MaxEndpoints is the most endpoints a path's community counts: FRR
	// reads the bandwidth into 32 bits of bytes per second.
	MaxEndpoints = math.MaxUint32 / EndpointBytesPerSecond
)

// LinkBandwidth is a link bandwidth extended community: the AS that set it
// and a bandwidth in bytes per second, an IEEE 754 single-precision number
// on the wire.
type LinkBandwidth struct {
	AS             uint16
	BytesPerSecond float32
}

// ForEndpoints is the community of a path to a node with n ready endpoints
// of a Service (n at least 1, at most MaxEndpoints), set by the speaker of
// AS asn.
func ForEndpoints(asn uint32, n int) LinkBandwidth {
	n = max(1, min(n, MaxEndpoints))
	as := uint16(ASTrans)
	if asn <= math.MaxUint16 {
		as = uint16(asn)
	}
	return LinkBandwidth{AS: as, BytesPerSecond: float32(n) * EndpointBytesPerSecond}
}

// Bytes is the community as sent: type, sub-type, the AS in two octets and
// the bandwidth as an IEEE 754 float, all big-endian.
func (l LinkBandwidth) Bytes() [8]byte {
	var b [8]byte
	b[0], b[1] = LinkBandwidthType, LinkBandwidthSubtype
	binary.BigEndian.PutUint16(b[2:4], l.AS)
	binary.BigEndian.PutUint32(b[4:8], math.Float32bits(l.BytesPerSecond))
	return b
}

// ParseLinkBandwidth reads a link bandwidth community as sent, transitive
// (type 0x00) or not (0x40).
func ParseLinkBandwidth(b []byte) (LinkBandwidth, error) {
	if len(b) != 8 || (b[0] != LinkBandwidthType && b[0] != 0x00) || b[1] != LinkBandwidthSubtype {
		return LinkBandwidth{}, fmt.Errorf("% x: %w: want 8 bytes of type 0x40 or 0x00, sub-type 0x04", b, ErrInvalid)
	}
	return LinkBandwidth{
		AS:             binary.BigEndian.Uint16(b[2:4]),
		BytesPerSecond: math.Float32frombits(binary.BigEndian.Uint32(b[4:8])),
	}, nil
}

// Endpoints is the number of endpoints l counts (ForEndpoints' n).
func (l LinkBandwidth) Endpoints() int {
	return int(math.Round(float64(l.BytesPerSecond) / EndpointBytesPerSecond))
}

// String writes l as FRR begins to: "LB:AS:bytes per second".
func (l LinkBandwidth) String() string {
	return fmt.Sprintf("LB:%d:%d", l.AS, uint32(l.BytesPerSecond))
}
