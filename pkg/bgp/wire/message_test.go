package wire

import (
	"errors"
	"strings"
	"testing"
)

func TestParseHeader(t *testing.T) {
	tests := []struct {
		name string
		msg  string
		want Header
		err  error
	}{
		{"keepalive", marker + "0013 04", Header{Len: 19, Type: TypeKeepalive}, nil},
		{"open", marker + "001d 01", Header{Len: 29, Type: TypeOpen}, nil},
		{"largest update", marker + "1000 02", Header{Len: 4096, Type: TypeUpdate}, nil},
		{"short", marker + "0013", Header{}, ErrTruncated},
		{"bad marker", "ffffffff ffffffff ffffffff fffffffe 0013 04", Header{}, ErrMarker},
		{"type 6", marker + "0013 06", Header{}, ErrType},
		{"type 0", marker + "0013 00", Header{}, ErrType},
		{"keepalive with a body", marker + "0014 04", Header{}, ErrLength},
		{"open too short", marker + "001c 01", Header{}, ErrLength},
		{"update too short", marker + "0016 02", Header{}, ErrLength},
		{"notification too short", marker + "0014 03", Header{}, ErrLength},
		{"route refresh too short", marker + "0016 05", Header{}, ErrLength},
		{"over 4096 (no extended messages)", marker + "1001 02", Header{}, ErrLength},
		{"under 19", marker + "0012 02", Header{}, ErrLength},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseHeader(unhex(t, tt.msg))
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("error %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestSplit(t *testing.T) {
	two := AppendKeepalive(AppendEndOfRIB(nil, IPv4Unicast))
	typ, body, rest, err := Split(two)
	if err != nil || typ != TypeUpdate || len(body) != 4 || len(rest) != HeaderLen {
		t.Fatalf("first: %v %v %d %d", typ, err, len(body), len(rest))
	}
	typ, body, rest, err = Split(rest)
	if err != nil || typ != TypeKeepalive || len(body) != 0 || len(rest) != 0 {
		t.Fatalf("second: %v %v %d %d", typ, err, len(body), len(rest))
	}
	// A message not all read yet: the reader reads on.
	if _, _, rest, err = Split(two[:22]); !errors.Is(err, ErrTruncated) || len(rest) != 22 {
		t.Fatalf("partial: %v", err)
	}
	if _, _, _, err = Split(two[:5]); !errors.Is(err, ErrTruncated) {
		t.Fatalf("partial header: %v", err)
	}
}

func TestNotification(t *testing.T) {
	tests := []struct {
		name string
		n    Notification
		want string
	}{
		{"hold timer", Notification{Code: ErrCodeHoldTimer}, "hold timer expired"},
		{"bad peer AS", Notification{Code: ErrCodeOpen, Subcode: 2}, "OPEN message error: bad peer AS"},
		{"with data", Notification{Code: ErrCodeHeader, Subcode: 2, Data: []byte{0x10, 0x01}}, "message header error: bad message length (data 10 01)"},
		{"unknown", Notification{Code: 42, Subcode: 7}, "code 42: subcode 7"},
		{"unknown subcode", Notification{Code: ErrCodeCease, Subcode: 99}, "cease: subcode 99"},
		{"shutdown", Shutdown("maintenance"), `cease: administrative shutdown: "maintenance"`},
		{"shutdown without a message", Shutdown(""), "cease: administrative shutdown"},
		{"reset with a message", Notification{Code: ErrCodeCease, Subcode: CeaseAdministrativeReset, Data: []byte("\x02ok")}, `cease: administrative reset: "ok"`},
		{"communication longer than its data", Notification{Code: ErrCodeCease, Subcode: CeaseAdministrativeShutdown, Data: []byte("\x09ok")}, "cease: administrative shutdown (data 09 6f 6b)"},
		{"communication not UTF-8", Notification{Code: ErrCodeCease, Subcode: CeaseAdministrativeShutdown, Data: []byte("\x01\xff")}, "cease: administrative shutdown (data 01 ff)"},
		{"hard reset", Notification{Code: ErrCodeCease, Subcode: CeaseHardReset}, "cease: hard reset"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.n.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
			b := tt.n.AppendTo(nil)
			typ, body, _, err := Split(b)
			if err != nil || typ != TypeNotification {
				t.Fatalf("Split: %v %v", typ, err)
			}
			got, err := DecodeNotification(body)
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != tt.n.String() || string(got.Data) != string(tt.n.Data) {
				t.Errorf("decoded %v, want %v", got, tt.n)
			}
		})
	}
	if _, err := DecodeNotification([]byte{6}); !errors.Is(err, ErrTruncated) {
		t.Errorf("short: %v", err)
	}
	// A communication over 255 bytes is cut at a rune.
	long := Shutdown(strings.Repeat("é", 200))
	if text, ok := long.Communication(); !ok || len(text) != 254 {
		t.Errorf("long communication: %d bytes, %v", len(text), ok)
	}
	// Data too long for a message is cut to fit.
	big := Notification{Code: ErrCodeUpdate, Subcode: 1, Data: make([]byte, 5000)}
	if b := big.AppendTo(nil); len(b) != MaxMessageLen {
		t.Errorf("big notification of %d bytes", len(b))
	}
}

func TestRouteRefresh(t *testing.T) {
	for _, rr := range []RouteRefresh{{Family: IPv4Unicast}, {Family: IPv6Unicast, Subtype: RefreshBegin}, {Family: IPv6Unicast, Subtype: RefreshEnd}} {
		t.Run(rr.Family.String(), func(t *testing.T) {
			typ, body, _, err := Split(rr.AppendTo(nil))
			if err != nil || typ != TypeRouteRefresh {
				t.Fatalf("Split: %v %v", typ, err)
			}
			got, err := DecodeRouteRefresh(body)
			if err != nil || got != rr {
				t.Fatalf("got %+v, %v", got, err)
			}
		})
	}
	for _, n := range []int{0, 3, 5} {
		if _, err := DecodeRouteRefresh(make([]byte, n)); !errors.Is(err, ErrLength) {
			t.Errorf("%d bytes: %v", n, err)
		}
	}
}

func TestStrings(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{TypeOpen.String(), "OPEN"}, {TypeUpdate.String(), "UPDATE"}, {TypeNotification.String(), "NOTIFICATION"},
		{TypeKeepalive.String(), "KEEPALIVE"}, {TypeRouteRefresh.String(), "ROUTE-REFRESH"}, {Type(9).String(), "type(9)"},
		{IPv4Unicast.String(), "ipv4-unicast"}, {IPv6Unicast.String(), "ipv6-unicast"}, {Family{AFI: 25, SAFI: 65}.String(), "afi 25 safi 65"},
	} {
		if c.got != c.want {
			t.Errorf("%q, want %q", c.got, c.want)
		}
	}
}
