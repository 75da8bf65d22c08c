// Package bfd is Bidirectional Forwarding Detection (RFC 5880) in
// asynchronous mode, for the BGP speaker's sessions: single hop (RFC 5881,
// UDP port 3784, packets sent and taken only with TTL 255) and multihop
// (RFC 5883, port 4784). It has no echo function and no authentication.
//
// One listener per local address and port serves every session of the
// process, and the sessions are found by discriminator or peer address.
//
// It needs no privileges: the ports are above 1023, and setting the TTL of
// its own sockets and reading that of received packets are unprivileged.
package bfd

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// State is a session's state (RFC 5880 section 4.1).
type State uint8

// The states, in their wire values.
const (
	AdminDown State = 0
	Down      State = 1
	Init      State = 2
	Up        State = 3
)

func (s State) String() string {
	switch s {
	case AdminDown:
		return "admindown"
	case Down:
		return "down"
	case Init:
		return "init"
	case Up:
		return "up"
	}
	return fmt.Sprintf("state%d", uint8(s))
}

// Diagnostic codes (RFC 5880 section 4.1) this package sends.
const (
	diagNone            = 0
	diagTimeExpired     = 1
	diagNeighborDown    = 3
	diagAdminDown       = 7
	packetLen           = 24
	version             = 1
	flagPoll, flagFinal = 0x20, 0x10
	flagAuth, flagMulti = 0x04, 0x01
)

// packet is a BFD control packet without authentication.
type packet struct {
	diag          uint8
	state         State
	poll, final   bool
	mult          uint8
	myDiscr       uint32
	yourDiscr     uint32
	desiredMinTx  uint32 // microseconds
	requiredMinRx uint32 // microseconds
}

func (p packet) marshal() []byte {
	b := make([]byte, packetLen)
	b[0] = version<<5 | p.diag&0x1f
	b[1] = byte(p.state) << 6
	if p.poll {
		b[1] |= flagPoll
	}
	if p.final {
		b[1] |= flagFinal
	}
	b[2] = p.mult
	b[3] = packetLen
	binary.BigEndian.PutUint32(b[4:], p.myDiscr)
	binary.BigEndian.PutUint32(b[8:], p.yourDiscr)
	binary.BigEndian.PutUint32(b[12:], p.desiredMinTx)
	binary.BigEndian.PutUint32(b[16:], p.requiredMinRx)
	// Required Min Echo RX Interval 0: no echo function.
	return b
}

var errPacket = errors.New("bfd: invalid control packet")

// parsePacket reads b and applies the checks of RFC 5880 section 6.8.6
// that need no session.
func parsePacket(b []byte) (packet, error) {
	if len(b) < packetLen {
		return packet{}, fmt.Errorf("%w: %d bytes", errPacket, len(b))
	}
	if v := b[0] >> 5; v != version {
		return packet{}, fmt.Errorf("%w: version %d", errPacket, v)
	}
	if l := int(b[3]); l < packetLen || l > len(b) {
		return packet{}, fmt.Errorf("%w: length %d in %d bytes", errPacket, l, len(b))
	}
	if b[1]&flagAuth != 0 {
		return packet{}, fmt.Errorf("%w: authentication, which is not configured", errPacket)
	}
	if b[1]&flagMulti != 0 {
		return packet{}, fmt.Errorf("%w: multipoint bit set", errPacket)
	}
	p := packet{
		diag:          b[0] & 0x1f,
		state:         State(b[1] >> 6),
		poll:          b[1]&flagPoll != 0,
		final:         b[1]&flagFinal != 0,
		mult:          b[2],
		myDiscr:       binary.BigEndian.Uint32(b[4:]),
		yourDiscr:     binary.BigEndian.Uint32(b[8:]),
		desiredMinTx:  binary.BigEndian.Uint32(b[12:]),
		requiredMinRx: binary.BigEndian.Uint32(b[16:]),
	}
	switch {
	case p.mult == 0:
		return packet{}, fmt.Errorf("%w: detect multiplier 0", errPacket)
	case p.myDiscr == 0:
		return packet{}, fmt.Errorf("%w: my discriminator 0", errPacket)
	case p.yourDiscr == 0 && p.state != Down && p.state != AdminDown:
		return packet{}, fmt.Errorf("%w: your discriminator 0 in state %s", errPacket, p.state)
	}
	return p, nil
}
