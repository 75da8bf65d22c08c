package wire

import "errors"

// Sentinel errors, wrapped with %w so that a caller can tell them apart
// (with errors.Is) and answer with the matching NOTIFICATION.
var (
	// ErrTruncated: the input ends before the message or a field in it does.
	ErrTruncated = errors.New("truncated")
	// ErrMarker: the header's marker is not all ones (RFC 4271 4.1).
	ErrMarker = errors.New("bad marker")
	// ErrLength: a length field is out of range or disagrees with the
	// bytes it covers.
	ErrLength = errors.New("bad length")
	// ErrType: a message type this package does not know.
	ErrType = errors.New("unknown message type")
	// ErrVersion: an OPEN for a BGP version other than 4.
	ErrVersion = errors.New("unsupported version")
	// ErrHoldTime: an OPEN's hold time of 1 or 2 seconds (RFC 4271 4.2).
	ErrHoldTime = errors.New("unacceptable hold time")
	// ErrIdentifier: an OPEN's BGP identifier of zero (RFC 6286).
	ErrIdentifier = errors.New("bad BGP identifier")
	// ErrMalformed: a field's contents break the message's format (an
	// attribute, capability or prefix that cannot be read).
	ErrMalformed = errors.New("malformed")
	// ErrTooBig: what was to be encoded does not fit in MaxMessageLen.
	ErrTooBig = errors.New("message too big")
	// ErrInvalid: what was to be encoded is not valid (a prefix of the
	// wrong family, a missing next hop, ...).
	ErrInvalid = errors.New("invalid")
)
