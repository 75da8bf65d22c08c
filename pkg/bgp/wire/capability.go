package wire

import (
	"encoding/binary"
	"fmt"
)

// Capability codes (IANA BGP Capability Codes) the speaker offers or reads.
const (
	capMultiprotocol   = 1  // RFC 4760
	capRouteRefresh    = 2  // RFC 2918
	capExtendedNextHop = 5  // RFC 8950
	capGracefulRestart = 64 // RFC 4724
	capFourOctetAS     = 65 // RFC 6793
	capAddPath         = 69 // RFC 7911
)

// ASTrans is written in the OPEN's two-octet My AS field (and AS_PATH on
// a session without four-octet AS) for an AS number above 65535 (RFC 6793).
const ASTrans = 23456

// AddPathMode is what a speaker does with path identifiers for a family
// (RFC 7911 4): receive them, send them, or both.
type AddPathMode uint8

// ADD-PATH Send/Receive values.
const (
	AddPathReceive AddPathMode = 1
	AddPathSend    AddPathMode = 2
	AddPathBoth    AddPathMode = 3
)

// AddPath is one family's entry in the ADD-PATH capability.
type AddPath struct {
	Family Family
	Mode   AddPathMode
}

// ExtendedNextHop is one entry of the extended next hop capability
// (RFC 8950 3): NLRI of Family may carry a next hop of NextHopAFI, e.g.
// IPv4 unicast with an IPv6 next hop.
type ExtendedNextHop struct {
	Family     Family
	NextHopAFI uint16
}

// GracefulRestart is the graceful restart capability (RFC 4724 3).
type GracefulRestart struct {
	// Restarting is the R bit: the sender has restarted, and the peer
	// must not wait for its End-of-RIB markers before sending its own.
	Restarting bool
	// Notification is the N bit (RFC 8538): graceful restart also
	// applies after a NOTIFICATION. Read from a peer; the speaker may
	// set it.
	Notification bool
	// Time is how long, in seconds, the peer is to keep the sender's
	// routes after the session goes down: 12 bits, at most 4095.
	Time uint16
	// Families are those whose forwarding state the sender keeps over a
	// restart; Forwarding is their F bit (kept this time).
	Families []GracefulRestartFamily
}

// GracefulRestartFamily is one family of the graceful restart capability.
type GracefulRestartFamily struct {
	Family     Family
	Forwarding bool
}

// Graceful restart flags: the high bits of the first two octets, and the
// per-family flags octet.
const (
	grRestarting   = 0x8000
	grNotification = 0x4000
	grTimeMask     = 0x0fff
	grForwarding   = 0x80
)

// Capabilities are those an OPEN carries (RFC 5492).
type Capabilities struct {
	// Families are the multiprotocol families (RFC 4760). A speaker that
	// offers none is taken to mean IPv4 unicast alone (see Negotiate).
	Families        []Family
	RouteRefresh    bool
	FourOctetAS     bool
	GracefulRestart *GracefulRestart
	AddPath         []AddPath
	ExtendedNextHop []ExtendedNextHop
	// Unknown are the codes of capabilities the decoder skipped; ignored
	// by the encoder.
	Unknown []uint8
}

// appendCapabilities appends each capability in turn; asn is the value of
// the four-octet AS capability.
func (c *Capabilities) appendTo(b []byte, asn uint32) ([]byte, error) {
	for _, f := range c.Families {
		b = append(b, capMultiprotocol, 4)
		b = binary.BigEndian.AppendUint16(b, f.AFI)
		b = append(b, 0, f.SAFI)
	}
	if c.RouteRefresh {
		b = append(b, capRouteRefresh, 0)
	}
	if len(c.ExtendedNextHop) > 0 {
		if len(c.ExtendedNextHop) > 255/6 {
			return b, fmt.Errorf("extended next hop: %d entries: %w", len(c.ExtendedNextHop), ErrTooBig)
		}
		b = append(b, capExtendedNextHop, octet(6*len(c.ExtendedNextHop)))
		for _, e := range c.ExtendedNextHop {
			b = binary.BigEndian.AppendUint16(b, e.Family.AFI)
			b = binary.BigEndian.AppendUint16(b, uint16(e.Family.SAFI))
			b = binary.BigEndian.AppendUint16(b, e.NextHopAFI)
		}
	}
	if gr := c.GracefulRestart; gr != nil {
		if gr.Time > grTimeMask {
			return b, fmt.Errorf("graceful restart time %d over 4095: %w", gr.Time, ErrInvalid)
		}
		if len(gr.Families) > (255-2)/4 {
			return b, fmt.Errorf("graceful restart: %d families: %w", len(gr.Families), ErrTooBig)
		}
		flags := gr.Time
		if gr.Restarting {
			flags |= grRestarting
		}
		if gr.Notification {
			flags |= grNotification
		}
		b = append(b, capGracefulRestart, octet(2+4*len(gr.Families)))
		b = binary.BigEndian.AppendUint16(b, flags)
		for _, f := range gr.Families {
			var ff byte
			if f.Forwarding {
				ff = grForwarding
			}
			b = binary.BigEndian.AppendUint16(b, f.Family.AFI)
			b = append(b, f.Family.SAFI, ff)
		}
	}
	if c.FourOctetAS {
		b = append(b, capFourOctetAS, 4)
		b = binary.BigEndian.AppendUint32(b, asn)
	}
	if len(c.AddPath) > 0 {
		if len(c.AddPath) > 255/4 {
			return b, fmt.Errorf("add-path: %d families: %w", len(c.AddPath), ErrTooBig)
		}
		b = append(b, capAddPath, octet(4*len(c.AddPath)))
		for _, a := range c.AddPath {
			if a.Mode < AddPathReceive || a.Mode > AddPathBoth {
				return b, fmt.Errorf("add-path mode %d: %w", a.Mode, ErrInvalid)
			}
			b = binary.BigEndian.AppendUint16(b, a.Family.AFI)
			b = append(b, a.Family.SAFI, byte(a.Mode))
		}
	}
	return b, nil
}

// parseCapabilities reads a capabilities optional parameter's value into
// c, and the four-octet AS capability's value into asn. Unknown codes are
// skipped by their length, as RFC 5492 asks.
func (c *Capabilities) parse(b []byte, asn *uint32) error {
	for len(b) > 0 {
		if len(b) < 2 {
			return fmt.Errorf("capability header: %w", ErrTruncated)
		}
		code, n := b[0], int(b[1])
		if len(b) < 2+n {
			return fmt.Errorf("capability %d of %d bytes, %d left: %w", code, n, len(b)-2, ErrTruncated)
		}
		v := b[2 : 2+n]
		b = b[2+n:]
		if err := c.parseOne(code, v, asn); err != nil {
			return fmt.Errorf("capability %d: %w", code, err)
		}
	}
	return nil
}

func (c *Capabilities) parseOne(code uint8, v []byte, asn *uint32) error {
	switch code {
	case capMultiprotocol:
		if len(v) != 4 {
			return fmt.Errorf("%d bytes: %w", len(v), ErrLength)
		}
		f := Family{AFI: binary.BigEndian.Uint16(v), SAFI: v[3]}
		if !hasFamily(c.Families, f) {
			c.Families = append(c.Families, f)
		}
	case capRouteRefresh:
		c.RouteRefresh = true
	case capExtendedNextHop:
		if len(v)%6 != 0 {
			return fmt.Errorf("%d bytes: %w", len(v), ErrLength)
		}
		for ; len(v) > 0; v = v[6:] {
			safi := binary.BigEndian.Uint16(v[2:])
			if safi > 255 {
				// A SAFI is one octet elsewhere: no family the
				// speaker knows, skipped.
				continue
			}
			c.ExtendedNextHop = append(c.ExtendedNextHop, ExtendedNextHop{
				Family:     Family{AFI: binary.BigEndian.Uint16(v), SAFI: uint8(safi)},
				NextHopAFI: binary.BigEndian.Uint16(v[4:]),
			})
		}
	case capGracefulRestart:
		if len(v) < 2 || (len(v)-2)%4 != 0 {
			return fmt.Errorf("%d bytes: %w", len(v), ErrLength)
		}
		flags := binary.BigEndian.Uint16(v)
		gr := &GracefulRestart{
			Restarting:   flags&grRestarting != 0,
			Notification: flags&grNotification != 0,
			Time:         flags & grTimeMask,
		}
		for v = v[2:]; len(v) > 0; v = v[4:] {
			gr.Families = append(gr.Families, GracefulRestartFamily{
				Family:     Family{AFI: binary.BigEndian.Uint16(v), SAFI: v[2]},
				Forwarding: v[3]&grForwarding != 0,
			})
		}
		c.GracefulRestart = gr
	case capFourOctetAS:
		if len(v) != 4 {
			return fmt.Errorf("%d bytes: %w", len(v), ErrLength)
		}
		c.FourOctetAS = true
		*asn = binary.BigEndian.Uint32(v)
	case capAddPath:
		if len(v)%4 != 0 {
			return fmt.Errorf("%d bytes: %w", len(v), ErrLength)
		}
		for i := 3; i < len(v); i += 4 {
			if m := AddPathMode(v[i]); m < AddPathReceive || m > AddPathBoth {
				// RFC 7911 4: the capability is then not
				// understood, and ignored as a whole.
				c.Unknown = append(c.Unknown, code)
				return nil
			}
		}
		for ; len(v) > 0; v = v[4:] {
			m := AddPathMode(v[3])
			c.AddPath = append(c.AddPath, AddPath{
				Family: Family{AFI: binary.BigEndian.Uint16(v), SAFI: v[2]},
				Mode:   m,
			})
		}
	default:
		c.Unknown = append(c.Unknown, code)
	}
	return nil
}
