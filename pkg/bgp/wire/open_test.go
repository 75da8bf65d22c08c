package wire

import (
	"errors"
	"net/netip"
	"reflect"
	"testing"
)

func TestOpenRoundTrip(t *testing.T) {
	id := netip.MustParseAddr("198.18.0.1")
	tests := []struct {
		name string
		open Open
	}{
		{"no capabilities", Open{ASN: 65001, HoldTime: 90, ID: id}},
		{"two-octet AS", Open{ASN: 64512, HoldTime: 3, ID: id, Capabilities: Capabilities{Families: []Family{IPv6Unicast}}}},
		{"everything", Open{ASN: 4200000001, HoldTime: 240, ID: id, Capabilities: Capabilities{
			Families:        []Family{IPv4Unicast, IPv6Unicast},
			RouteRefresh:    true,
			FourOctetAS:     true,
			ExtendedNextHop: []ExtendedNextHop{{Family: IPv4Unicast, NextHopAFI: AFIIPv6}},
			GracefulRestart: &GracefulRestart{Restarting: true, Notification: true, Time: 4095, Families: []GracefulRestartFamily{
				{Family: IPv4Unicast, Forwarding: true}, {Family: IPv6Unicast}}},
			AddPath: []AddPath{{Family: IPv4Unicast, Mode: AddPathBoth}, {Family: IPv6Unicast, Mode: AddPathReceive}},
		}}},
		{"graceful restart without families", Open{ASN: 65001, ID: id, Capabilities: Capabilities{
			GracefulRestart: &GracefulRestart{Time: 0}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := tt.open.AppendTo(nil)
			if err != nil {
				t.Fatal(err)
			}
			typ, body, _, err := Split(b)
			if err != nil || typ != TypeOpen {
				t.Fatalf("Split: %v %v", typ, err)
			}
			got, err := DecodeOpen(body)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tt.open) {
				t.Fatalf("decoded\n %+v\nwant\n %+v", *got, tt.open)
			}
		})
	}
}

func TestOpenEncodeErrors(t *testing.T) {
	id := netip.MustParseAddr("198.18.0.1")
	tests := []struct {
		name string
		open Open
		want error
	}{
		{"no identifier", Open{ASN: 65001}, ErrInvalid},
		{"IPv6 identifier", Open{ASN: 65001, ID: netip.MustParseAddr("2001:db8::1")}, ErrInvalid},
		{"hold time 2", Open{ASN: 65001, HoldTime: 2, ID: id}, ErrInvalid},
		{"four-octet AS without the capability", Open{ASN: 65536, ID: id}, ErrInvalid},
		{"restart time over 12 bits", Open{ASN: 65001, ID: id, Capabilities: Capabilities{GracefulRestart: &GracefulRestart{Time: 4096}}}, ErrInvalid},
		{"add-path mode 0", Open{ASN: 65001, ID: id, Capabilities: Capabilities{AddPath: []AddPath{{Family: IPv4Unicast}}}}, ErrInvalid},
		{"too many families", Open{ASN: 65001, ID: id, Capabilities: Capabilities{Families: make([]Family, 50)}}, ErrTooBig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := tt.open.AppendTo([]byte{1})
			if !errors.Is(err, tt.want) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
			if len(b) != 1 {
				t.Fatalf("%d bytes left appended", len(b)-1)
			}
		})
	}
}

func TestDecodeOpen(t *testing.T) {
	tests := []struct {
		name string
		body string
		want *Open
		err  error
	}{{
		name: "no parameters",
		body: "04 fde9 00b4 c6120001 00",
		want: &Open{ASN: 65001, HoldTime: 180, ID: netip.MustParseAddr("198.18.0.1")},
	}, {
		name: "capabilities one per parameter, unknown ones and parameter types skipped",
		body: "04 5ba0 0003 c6120001 1b" +
			"02 06 01 04 0002 00 01" + // IPv6 unicast
			"02 02 46 00" + // enhanced route refresh (70): unknown here
			"02 06 41 04 00010000" + // four-octet AS 65536
			"01 01 00" + // an authentication parameter: skipped
			"02 02 80 00", // a private capability
		want: &Open{ASN: 65536, HoldTime: 3, ID: netip.MustParseAddr("198.18.0.1"), Capabilities: Capabilities{
			Families: []Family{IPv6Unicast}, FourOctetAS: true, Unknown: []uint8{70, 128}}},
	}, {
		name: "extended optional parameters length (RFC 9072)",
		body: "04 fde9 005a c6120001 ff ff 0005 02 0002 02 00",
		want: &Open{ASN: 65001, HoldTime: 90, ID: netip.MustParseAddr("198.18.0.1"), Capabilities: Capabilities{RouteRefresh: true}},
	}, {
		name: "add-path with a bad mode: the capability ignored (RFC 7911 4)",
		body: "04 fde9 005a c6120001 0c 02 0a 45 08 0001 01 01 0002 01 07",
		want: &Open{ASN: 65001, HoldTime: 90, ID: netip.MustParseAddr("198.18.0.1"), Capabilities: Capabilities{Unknown: []uint8{69}}},
	}, {
		name: "extended next hop with a two-octet SAFI past 255: that entry skipped",
		body: "04 fde9 005a c6120001 10 02 0e 05 0c 0001 0100 0002 0001 0001 0002",
		want: &Open{ASN: 65001, HoldTime: 90, ID: netip.MustParseAddr("198.18.0.1"), Capabilities: Capabilities{
			ExtendedNextHop: []ExtendedNextHop{{Family: IPv4Unicast, NextHopAFI: AFIIPv6}}}},
	},
		{name: "version 3", body: "03 fde9 005a c6120001 00", err: ErrVersion},
		{name: "hold time 1", body: "04 fde9 0001 c6120001 00", err: ErrHoldTime},
		{name: "identifier zero", body: "04 fde9 005a 00000000 00", err: ErrIdentifier},
		{name: "short", body: "04 fde9 005a c6120001", err: ErrTruncated},
		{name: "parameters longer than the body", body: "04 fde9 005a c6120001 04 02 02", err: ErrLength},
		{name: "parameters shorter than the body", body: "04 fde9 005a c6120001 00 02 00", err: ErrLength},
		{name: "parameter past its end", body: "04 fde9 005a c6120001 03 02 05 02", err: ErrTruncated},
		{name: "capability past its parameter", body: "04 fde9 005a c6120001 04 02 02 41 04", err: ErrTruncated},
		{name: "capability header cut", body: "04 fde9 005a c6120001 03 02 01 41", err: ErrTruncated},
		{name: "multiprotocol of 3 bytes", body: "04 fde9 005a c6120001 07 02 05 01 03 0001 01", err: ErrLength},
		{name: "four-octet AS of 2 bytes", body: "04 fde9 005a c6120001 06 02 04 41 02 0001", err: ErrLength},
		{name: "graceful restart of 3 bytes", body: "04 fde9 005a c6120001 07 02 05 40 03 0078 01", err: ErrLength},
		{name: "add-path of 3 bytes", body: "04 fde9 005a c6120001 07 02 05 45 03 0001 01", err: ErrLength},
		{name: "extended next hop of 4 bytes", body: "04 fde9 005a c6120001 08 02 06 05 04 0001 0001", err: ErrLength},
		{name: "extended parameters length cut", body: "04 fde9 005a c6120001 ff ff 00", err: ErrTruncated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeOpen(unhex(t, tt.body))
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("error %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("decoded\n %+v\nwant\n %+v", got, tt.want)
			}
		})
	}
}

func TestNegotiate(t *testing.T) {
	id := netip.MustParseAddr("198.18.0.1")
	local := Open{ASN: 65001, HoldTime: 90, ID: id, Capabilities: Capabilities{
		Families:        []Family{IPv4Unicast, IPv6Unicast},
		RouteRefresh:    true,
		FourOctetAS:     true,
		ExtendedNextHop: []ExtendedNextHop{{Family: IPv4Unicast, NextHopAFI: AFIIPv6}},
		AddPath:         []AddPath{{Family: IPv4Unicast, Mode: AddPathSend}, {Family: IPv6Unicast, Mode: AddPathSend}},
	}}
	gr := &GracefulRestart{Time: 120, Families: []GracefulRestartFamily{{Family: IPv4Unicast}}}
	tests := []struct {
		name string
		peer Open
		want Negotiated
	}{{
		name: "a peer with no capabilities: IPv4 unicast, two-octet AS",
		peer: Open{ASN: 65002, HoldTime: 180, ID: id},
		want: Negotiated{HoldTime: 90, Families: []Family{IPv4Unicast}},
	}, {
		name: "a peer offering all",
		peer: Open{ASN: 65002, HoldTime: 30, ID: id, Capabilities: Capabilities{
			Families:        []Family{IPv6Unicast, IPv4Unicast},
			RouteRefresh:    true,
			FourOctetAS:     true,
			GracefulRestart: gr,
			ExtendedNextHop: []ExtendedNextHop{{Family: IPv4Unicast, NextHopAFI: AFIIPv6}},
			AddPath:         []AddPath{{Family: IPv4Unicast, Mode: AddPathBoth}, {Family: IPv6Unicast, Mode: AddPathReceive}},
		}},
		want: Negotiated{HoldTime: 30, FourOctetAS: true, RouteRefresh: true, PeerGracefulRestart: gr,
			Families:        []Family{IPv4Unicast, IPv6Unicast},
			AddPathSend:     []Family{IPv4Unicast, IPv6Unicast},
			ExtendedNextHop: []ExtendedNextHop{{Family: IPv4Unicast, NextHopAFI: AFIIPv6}}},
	}, {
		name: "add-path: the peer only sends, and only IPv6 is common",
		peer: Open{ASN: 65002, HoldTime: 0, ID: id, Capabilities: Capabilities{
			Families: []Family{IPv6Unicast},
			AddPath:  []AddPath{{Family: IPv4Unicast, Mode: AddPathReceive}, {Family: IPv6Unicast, Mode: AddPathSend}},
		}},
		want: Negotiated{HoldTime: 0, Families: []Family{IPv6Unicast}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Negotiate(&local, &tt.peer)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got\n %+v\nwant\n %+v", got, tt.want)
			}
			for _, f := range []Family{IPv4Unicast, IPv6Unicast} {
				if got.SendsAddPath(f) != hasFamily(tt.want.AddPathSend, f) || got.Options(f).AddPath != got.SendsAddPath(f) {
					t.Errorf("SendsAddPath(%v) wrong", f)
				}
			}
			if got.IPv6NextHopFor(IPv4Unicast) != (len(tt.want.ExtendedNextHop) > 0) || !got.IPv6NextHopFor(IPv6Unicast) {
				t.Errorf("IPv6NextHopFor wrong")
			}
		})
	}
	// The speaker receiving path identifiers: it offered to receive and
	// the peer to send.
	l := Open{Capabilities: Capabilities{AddPath: []AddPath{{Family: IPv4Unicast, Mode: AddPathReceive}}}}
	p := Open{Capabilities: Capabilities{AddPath: []AddPath{{Family: IPv4Unicast, Mode: AddPathBoth}}}}
	if n := Negotiate(&l, &p); !reflect.DeepEqual(n.AddPathReceive, []Family{IPv4Unicast}) || n.AddPathSend != nil {
		t.Errorf("receive: %+v", n)
	}
}
