package wire

import (
	"encoding/binary"
	"fmt"
)

// Message sizes (RFC 4271 4.1). Extended messages (RFC 8654) are not
// negotiated, so MaxMessageLen bounds every message in both directions.
const (
	HeaderLen     = 19
	MaxMessageLen = 4096
	markerLen     = 16
)

// Type is a BGP message type.
type Type uint8

// Message types (RFC 4271 4.1, RFC 2918 for ROUTE-REFRESH).
const (
	TypeOpen         Type = 1
	TypeUpdate       Type = 2
	TypeNotification Type = 3
	TypeKeepalive    Type = 4
	TypeRouteRefresh Type = 5
)

func (t Type) String() string {
	switch t {
	case TypeOpen:
		return "OPEN"
	case TypeUpdate:
		return "UPDATE"
	case TypeNotification:
		return "NOTIFICATION"
	case TypeKeepalive:
		return "KEEPALIVE"
	case TypeRouteRefresh:
		return "ROUTE-REFRESH"
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

// minLen is the shortest valid message of each type, header included: a
// shorter length is a header error (RFC 4271 6.1, Bad Message Length).
func (t Type) minLen() int {
	switch t {
	case TypeOpen:
		return HeaderLen + 10
	case TypeUpdate:
		return HeaderLen + 4
	case TypeNotification:
		return HeaderLen + 2
	case TypeKeepalive:
		return HeaderLen
	case TypeRouteRefresh:
		return HeaderLen + 4
	}
	return HeaderLen
}

// Header is a message's fixed header, the marker left out.
type Header struct {
	Len  int // whole message, header included
	Type Type
}

// ParseHeader reads the header at the start of b and checks it: the
// marker, a length within the limits of its type, a known type. It needs
// HeaderLen bytes only, so that a reader learns how many more to read.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderLen {
		return Header{}, fmt.Errorf("header: %d bytes: %w", len(b), ErrTruncated)
	}
	for _, c := range b[:markerLen] {
		if c != 0xff {
			return Header{}, fmt.Errorf("header: %w", ErrMarker)
		}
	}
	h := Header{Len: int(binary.BigEndian.Uint16(b[16:18])), Type: Type(b[18])}
	if h.Type < TypeOpen || h.Type > TypeRouteRefresh {
		return h, fmt.Errorf("header: %d: %w", b[18], ErrType)
	}
	if h.Len < h.Type.minLen() || h.Len > MaxMessageLen ||
		(h.Type == TypeKeepalive && h.Len != HeaderLen) {
		return h, fmt.Errorf("header: %s of %d bytes: %w", h.Type, h.Len, ErrLength)
	}
	return h, nil
}

// Split takes the first whole message off b: its type, its body (after
// the header) and the bytes after it. Fewer bytes than the header
// announces give ErrTruncated, so that a stream reader reads on.
func Split(b []byte) (t Type, body, rest []byte, err error) {
	h, err := ParseHeader(b)
	if err != nil {
		return 0, nil, b, err
	}
	if len(b) < h.Len {
		return h.Type, nil, b, fmt.Errorf("%s: %d of %d bytes: %w", h.Type, len(b), h.Len, ErrTruncated)
	}
	return h.Type, b[HeaderLen:h.Len:h.Len], b[h.Len:], nil
}

// appendHeader appends a header whose length finishHeader fills in, and
// returns where the message starts.
func appendHeader(b []byte, t Type) ([]byte, int) {
	start := len(b)
	b = append(b,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0, 0, byte(t))
	return b, start
}

// finishHeader writes the length of the message at start, now that it is
// complete; a message over MaxMessageLen is taken back off b.
func finishHeader(b []byte, start int) ([]byte, error) {
	n := len(b) - start
	if n > MaxMessageLen {
		return b[:start], fmt.Errorf("%s of %d bytes: %w", Type(b[start+18]), n, ErrTooBig)
	}
	binary.BigEndian.PutUint16(b[start+16:], uint16(n)) //nolint:gosec // n <= MaxMessageLen, checked above
	return b, nil
}

// AppendKeepalive appends a KEEPALIVE: a header alone (RFC 4271 4.4).
func AppendKeepalive(b []byte) []byte {
	b, start := appendHeader(b, TypeKeepalive)
	b[start+17] = HeaderLen
	return b
}

// octet is n as one octet, for a length or count that its caller has
// checked to be below 256.
func octet(n int) byte {
	return byte(n) //nolint:gosec // callers check n < 256
}
