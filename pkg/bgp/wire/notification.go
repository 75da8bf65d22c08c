package wire

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// NOTIFICATION error codes (RFC 4271 4.5, RFC 7313 for 7).
const (
	ErrCodeHeader       uint8 = 1
	ErrCodeOpen         uint8 = 2
	ErrCodeUpdate       uint8 = 3
	ErrCodeHoldTimer    uint8 = 4
	ErrCodeFSM          uint8 = 5
	ErrCodeCease        uint8 = 6
	ErrCodeRouteRefresh uint8 = 7
)

// Cease subcodes (RFC 4486, RFC 8538 for hard reset).
const (
	CeaseMaxPrefixes            uint8 = 1
	CeaseAdministrativeShutdown uint8 = 2
	CeasePeerDeconfigured       uint8 = 3
	CeaseAdministrativeReset    uint8 = 4
	CeaseConnectionRejected     uint8 = 5
	CeaseConfigurationChange    uint8 = 6
	CeaseCollisionResolution    uint8 = 7
	CeaseOutOfResources         uint8 = 8
	CeaseHardReset              uint8 = 9
)

// Notification is a NOTIFICATION message (RFC 4271 4.5).
type Notification struct {
	Code    uint8
	Subcode uint8
	Data    []byte
}

// Shutdown is a Cease / Administrative Shutdown with a shutdown
// communication (RFC 9003): a length octet and a UTF-8 message that an
// operator sees on the router. A message over 255 bytes is cut at a rune
// boundary.
func Shutdown(message string) Notification {
	return Notification{Code: ErrCodeCease, Subcode: CeaseAdministrativeShutdown, Data: communication(message)}
}

func communication(s string) []byte {
	if s == "" {
		return nil
	}
	for len(s) > maxShutdownMessage {
		_, n := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-n]
	}
	b := make([]byte, 0, 1+len(s))
	b = append(b, octet(len(s)))
	return append(b, s...)
}

// AppendTo appends the NOTIFICATION to b; data that does not fit is
// cut, as a NOTIFICATION is the last word on a session and must go out.
func (m *Notification) AppendTo(b []byte) []byte {
	b, start := appendHeader(b, TypeNotification)
	b = append(b, m.Code, m.Subcode)
	d := m.Data
	if room := MaxMessageLen - HeaderLen - 2; len(d) > room {
		d = d[:room]
	}
	b = append(b, d...)
	b, _ = finishHeader(b, start) // fits: cut above
	return b
}

// DecodeNotification reads a NOTIFICATION's body. Data aliases body.
func DecodeNotification(body []byte) (Notification, error) {
	if len(body) < 2 {
		return Notification{}, fmt.Errorf("notification: %d bytes: %w", len(body), ErrTruncated)
	}
	m := Notification{Code: body[0], Subcode: body[1]}
	if len(body) > 2 {
		m.Data = body[2:]
	}
	return m, nil
}

var codeNames = map[uint8]string{
	ErrCodeHeader:       "message header error",
	ErrCodeOpen:         "OPEN message error",
	ErrCodeUpdate:       "UPDATE message error",
	ErrCodeHoldTimer:    "hold timer expired",
	ErrCodeFSM:          "finite state machine error",
	ErrCodeCease:        "cease",
	ErrCodeRouteRefresh: "ROUTE-REFRESH message error",
}

var subcodeNames = map[[2]uint8]string{
	{ErrCodeHeader, 1}: "connection not synchronized",
	{ErrCodeHeader, 2}: "bad message length",
	{ErrCodeHeader, 3}: "bad message type",

	{ErrCodeOpen, 1}:  "unsupported version number",
	{ErrCodeOpen, 2}:  "bad peer AS",
	{ErrCodeOpen, 3}:  "bad BGP identifier",
	{ErrCodeOpen, 4}:  "unsupported optional parameter",
	{ErrCodeOpen, 6}:  "unacceptable hold time",
	{ErrCodeOpen, 7}:  "unsupported capability",
	{ErrCodeOpen, 11}: "role mismatch",

	{ErrCodeUpdate, 1}:  "malformed attribute list",
	{ErrCodeUpdate, 2}:  "unrecognized well-known attribute",
	{ErrCodeUpdate, 3}:  "missing well-known attribute",
	{ErrCodeUpdate, 4}:  "attribute flags error",
	{ErrCodeUpdate, 5}:  "attribute length error",
	{ErrCodeUpdate, 6}:  "invalid ORIGIN attribute",
	{ErrCodeUpdate, 8}:  "invalid NEXT_HOP attribute",
	{ErrCodeUpdate, 9}:  "optional attribute error",
	{ErrCodeUpdate, 10}: "invalid network field",
	{ErrCodeUpdate, 11}: "malformed AS_PATH",

	{ErrCodeFSM, 1}: "unexpected message in OpenSent",
	{ErrCodeFSM, 2}: "unexpected message in OpenConfirm",
	{ErrCodeFSM, 3}: "unexpected message in Established",

	{ErrCodeCease, CeaseMaxPrefixes}:            "maximum number of prefixes reached",
	{ErrCodeCease, CeaseAdministrativeShutdown}: "administrative shutdown",
	{ErrCodeCease, CeasePeerDeconfigured}:       "peer de-configured",
	{ErrCodeCease, CeaseAdministrativeReset}:    "administrative reset",
	{ErrCodeCease, CeaseConnectionRejected}:     "connection rejected",
	{ErrCodeCease, CeaseConfigurationChange}:    "other configuration change",
	{ErrCodeCease, CeaseCollisionResolution}:    "connection collision resolution",
	{ErrCodeCease, CeaseOutOfResources}:         "out of resources",
	{ErrCodeCease, CeaseHardReset}:              "hard reset",

	{ErrCodeRouteRefresh, 1}: "invalid message length",
}

// String reads the notification as a log line: code and subcode by name,
// a shutdown communication as its text, other data in hex.
func (m Notification) String() string {
	var s strings.Builder
	if name, ok := codeNames[m.Code]; ok {
		s.WriteString(name)
	} else {
		fmt.Fprintf(&s, "code %d", m.Code)
	}
	if name, ok := subcodeNames[[2]uint8{m.Code, m.Subcode}]; ok {
		s.WriteString(": ")
		s.WriteString(name)
	} else if m.Subcode != 0 {
		fmt.Fprintf(&s, ": subcode %d", m.Subcode)
	}
	if len(m.Data) == 0 {
		return s.String()
	}
	if text, ok := m.Communication(); ok {
		fmt.Fprintf(&s, ": %q", text)
	} else {
		fmt.Fprintf(&s, " (data % x)", m.Data)
	}
	return s.String()
}

// Communication is the shutdown communication of a Cease /
// Administrative Shutdown or Reset (RFC 9003), if the data holds a valid
// one.
func (m Notification) Communication() (string, bool) {
	if m.Code != ErrCodeCease || (m.Subcode != CeaseAdministrativeShutdown && m.Subcode != CeaseAdministrativeReset) ||
		len(m.Data) == 0 || int(m.Data[0]) > len(m.Data)-1 {
		return "", false
	}
	text := m.Data[1 : 1+int(m.Data[0])]
	if !utf8.Valid(text) {
		return "", false
	}
	return string(text), true
}

// maxShutdownMessage is the longest shutdown communication (RFC 9003 2).
const maxShutdownMessage = 255
