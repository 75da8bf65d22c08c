package wire

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// bgpVersion is the only version spoken (RFC 4271).
const bgpVersion = 4

// Optional parameter types: capabilities (RFC 5492), and the marker of
// the extended optional parameters length (RFC 9072).
const (
	paramCapabilities = 2
	paramExtended     = 255
)

// Open is an OPEN message (RFC 4271 4.2).
type Open struct {
	// ASN is the sender's AS number. With FourOctetAS it goes in the
	// four-octet AS capability, and the two-octet My AS field carries
	// ASTrans when it does not fit.
	ASN uint32
	// HoldTime in seconds: 0 (no keepalives) or at least 3.
	HoldTime uint16
	// ID is the BGP identifier, an IPv4 address.
	ID netip.Addr
	Capabilities
}

// AppendTo appends the OPEN message to b. All capabilities go in one
// optional parameter, which RFC 5492 allows and routers expect.
func (m *Open) AppendTo(b []byte) ([]byte, error) {
	if !m.ID.Is4() || m.ID.IsUnspecified() {
		return b, fmt.Errorf("open: identifier %v: %w", m.ID, ErrInvalid)
	}
	if m.HoldTime == 1 || m.HoldTime == 2 {
		return b, fmt.Errorf("open: hold time %d: %w", m.HoldTime, ErrInvalid)
	}
	myAS := uint16(ASTrans)
	switch {
	case m.ASN <= 0xffff:
		myAS = uint16(m.ASN)
	case !m.FourOctetAS:
		return b, fmt.Errorf("open: AS %d needs four-octet AS: %w", m.ASN, ErrInvalid)
	}
	b, start := appendHeader(b, TypeOpen)
	b = append(b, bgpVersion)
	b = binary.BigEndian.AppendUint16(b, myAS)
	b = binary.BigEndian.AppendUint16(b, m.HoldTime)
	id := m.ID.As4()
	b = append(b, id[:]...)
	b = append(b, 0, paramCapabilities, 0) // lengths filled in below
	caps := len(b)
	b, err := m.appendTo(b, m.ASN)
	if err != nil {
		return b[:start], fmt.Errorf("open: %w", err)
	}
	n := len(b) - caps
	if n == 0 {
		b = b[:caps-3]
		b = append(b, 0)
	} else {
		if n > 255-2 {
			// RFC 9072 would allow more, but the speaker's few
			// capabilities never come near.
			return b[:start], fmt.Errorf("open: capabilities of %d bytes: %w", n, ErrTooBig)
		}
		b[caps-3], b[caps-1] = octet(n+2), octet(n)
	}
	return finishHeader(b, start)
}

// DecodeOpen reads an OPEN message's body (after the header). It checks
// what RFC 4271 6.2 asks of it (version, hold time, identifier) and
// returns errors wrapping ErrVersion, ErrHoldTime and ErrIdentifier for
// those, so that the caller sends the matching NOTIFICATION. Optional
// parameters other than capabilities, and unknown capabilities, are
// skipped.
func DecodeOpen(body []byte) (*Open, error) {
	if len(body) < 10 {
		return nil, fmt.Errorf("open: %d bytes: %w", len(body), ErrTruncated)
	}
	if body[0] != bgpVersion {
		return nil, fmt.Errorf("open: version %d: %w", body[0], ErrVersion)
	}
	m := &Open{
		ASN:      uint32(binary.BigEndian.Uint16(body[1:])),
		HoldTime: binary.BigEndian.Uint16(body[3:]),
		ID:       netip.AddrFrom4([4]byte(body[5:9])),
	}
	if m.HoldTime == 1 || m.HoldTime == 2 {
		return nil, fmt.Errorf("open: hold time %d: %w", m.HoldTime, ErrHoldTime)
	}
	if m.ID.IsUnspecified() {
		return nil, fmt.Errorf("open: identifier %v: %w", m.ID, ErrIdentifier)
	}
	n, params := int(body[9]), body[10:]
	// RFC 9072: a first parameter of type 255 after a length of 255
	// announces two-octet lengths, for the length and for each parameter.
	long := n == paramExtended && len(params) > 0 && params[0] == paramExtended
	if long {
		if len(params) < 3 {
			return nil, fmt.Errorf("open: extended parameters length: %w", ErrTruncated)
		}
		n, params = int(binary.BigEndian.Uint16(params[1:])), params[3:]
	}
	if n != len(params) {
		return nil, fmt.Errorf("open: parameters of %d bytes in %d: %w", n, len(params), ErrLength)
	}
	asn := m.ASN
	for len(params) > 0 {
		var typ uint8
		var v []byte
		if long {
			if len(params) < 3 {
				return nil, fmt.Errorf("open: parameter header: %w", ErrTruncated)
			}
			typ, n, params = params[0], int(binary.BigEndian.Uint16(params[1:])), params[3:]
		} else {
			if len(params) < 2 {
				return nil, fmt.Errorf("open: parameter header: %w", ErrTruncated)
			}
			typ, n, params = params[0], int(params[1]), params[2:]
		}
		if n > len(params) {
			return nil, fmt.Errorf("open: parameter %d of %d bytes, %d left: %w", typ, n, len(params), ErrTruncated)
		}
		v, params = params[:n], params[n:]
		if typ != paramCapabilities {
			// Deprecated (authentication, RFC 5492 says 1 is) or
			// unknown: nothing the speaker needs.
			continue
		}
		if err := m.parse(v, &asn); err != nil {
			return nil, fmt.Errorf("open: %w", err)
		}
	}
	if m.FourOctetAS {
		m.ASN = asn
	}
	return m, nil
}

// Negotiated is what two OPENs agree on: what the speaker may send to the
// peer and how to encode it.
type Negotiated struct {
	// HoldTime is the smaller of both (RFC 4271 4.2); 0 means none.
	HoldTime uint16
	// FourOctetAS: both offered it; AS numbers in AS_PATH take four
	// octets (RFC 6793).
	FourOctetAS bool
	// Families both offered (IPv4 unicast for a side offering none).
	Families []Family
	// AddPathSend are the families the speaker sends path identifiers
	// in: it offered to send and the peer to receive (RFC 7911 4).
	AddPathSend []Family
	// AddPathReceive are those the peer sends path identifiers in.
	AddPathReceive []Family
	// ExtendedNextHop are the families whose NLRI may carry a next hop
	// of another AFI, as both offered it (RFC 8950).
	ExtendedNextHop []ExtendedNextHop
	// RouteRefresh: the peer may send ROUTE-REFRESH, as both offered it.
	RouteRefresh bool
	// PeerGracefulRestart is the peer's graceful restart capability, nil
	// when it offered none.
	PeerGracefulRestart *GracefulRestart
}

// Negotiate computes what local (the speaker's OPEN) and peer (the
// router's) agree on.
func Negotiate(local, peer *Open) Negotiated {
	n := Negotiated{
		HoldTime:            min(local.HoldTime, peer.HoldTime),
		FourOctetAS:         local.FourOctetAS && peer.FourOctetAS,
		RouteRefresh:        local.RouteRefresh && peer.RouteRefresh,
		PeerGracefulRestart: peer.GracefulRestart,
	}
	lf, pf := local.families(), peer.families()
	for _, f := range lf {
		if hasFamily(pf, f) && !hasFamily(n.Families, f) {
			n.Families = append(n.Families, f)
		}
	}
	for _, a := range local.AddPath {
		if !hasFamily(n.Families, a.Family) {
			continue
		}
		p := peer.addPathMode(a.Family)
		if a.Mode&AddPathSend != 0 && p&AddPathReceive != 0 && !hasFamily(n.AddPathSend, a.Family) {
			n.AddPathSend = append(n.AddPathSend, a.Family)
		}
		if a.Mode&AddPathReceive != 0 && p&AddPathSend != 0 && !hasFamily(n.AddPathReceive, a.Family) {
			n.AddPathReceive = append(n.AddPathReceive, a.Family)
		}
	}
	for _, e := range local.ExtendedNextHop {
		for _, p := range peer.ExtendedNextHop {
			if e == p {
				n.ExtendedNextHop = append(n.ExtendedNextHop, e)
				break
			}
		}
	}
	return n
}

// SendsAddPath reports whether UPDATEs of f to the peer carry path
// identifiers.
func (n *Negotiated) SendsAddPath(f Family) bool { return hasFamily(n.AddPathSend, f) }

// IPv6NextHopFor reports whether NLRI of f may be sent with an IPv6 next
// hop (RFC 8950; IPv6 unicast always may).
func (n *Negotiated) IPv6NextHopFor(f Family) bool {
	if f.AFI == AFIIPv6 {
		return true
	}
	for _, e := range n.ExtendedNextHop {
		if e.Family == f && e.NextHopAFI == AFIIPv6 {
			return true
		}
	}
	return false
}

// families are the multiprotocol families offered, IPv4 unicast when none
// are (RFC 4760 8: a speaker without the capability speaks IPv4 unicast).
func (m *Open) families() []Family {
	if len(m.Families) == 0 {
		return []Family{IPv4Unicast}
	}
	return m.Families
}

func (m *Open) addPathMode(f Family) AddPathMode {
	var mode AddPathMode
	for _, a := range m.AddPath {
		if a.Family == f {
			mode |= a.Mode
		}
	}
	return mode
}
