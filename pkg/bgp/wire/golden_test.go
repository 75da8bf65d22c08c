package wire

import (
	"bytes"
	"encoding/hex"
	"net/netip"
	"strings"
	"testing"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/community"
)

// unhex reads bytes written as hex with spaces and line breaks, so that
// the golden messages below read field by field.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatalf("bad hex in test: %v", err)
	}
	return b
}

const marker = "ffffffff ffffffff ffffffff ffffffff"

// TestGolden compares encodings with messages written out by hand from the
// RFCs, field by field.
func TestGolden(t *testing.T) {
	v4attrs := &Attributes{
		Origin:      OriginIGP,
		ASPath:      []uint32{65001},
		Communities: []community.Community{65001<<16 | 100},
	}
	ibgp := &Attributes{Origin: OriginIGP, LocalPref: 100, HasLocalPref: true}
	tests := []struct {
		name   string
		encode func([]byte) ([]byte, error)
		want   string
	}{{
		name:   "keepalive (RFC 4271 4.4: the header alone, length 19)",
		encode: func(b []byte) ([]byte, error) { return AppendKeepalive(b), nil },
		want:   marker + "0013 04",
	}, {
		name: "open: AS 65001, hold 90, id 198.18.0.1, IPv4 and IPv6 unicast, route refresh, four-octet AS",
		encode: (&Open{ASN: 65001, HoldTime: 90, ID: netip.MustParseAddr("198.18.0.1"), Capabilities: Capabilities{
			Families:     []Family{IPv4Unicast, IPv6Unicast},
			RouteRefresh: true,
			FourOctetAS:  true,
		}}).AppendTo,
		want: marker + "0033 01" + // length 51, OPEN
			"04 fde9 005a c6120001" + // version, My AS, hold time, identifier
			"16 02 14" + // optional parameters: 22 bytes, capabilities of 20
			"01 04 0001 00 01" + // multiprotocol IPv4 unicast (RFC 4760 8)
			"01 04 0002 00 01" + // multiprotocol IPv6 unicast
			"02 00" + // route refresh (RFC 2918)
			"41 04 0000fde9", // four-octet AS (RFC 6793)
	}, {
		name: "open: four-octet AS 4200000001 as AS_TRANS, graceful restart, add-path, extended next hop",
		encode: (&Open{ASN: 4200000001, HoldTime: 0, ID: netip.MustParseAddr("198.18.0.2"), Capabilities: Capabilities{
			Families:        []Family{IPv4Unicast},
			ExtendedNextHop: []ExtendedNextHop{{Family: IPv4Unicast, NextHopAFI: AFIIPv6}},
			GracefulRestart: &GracefulRestart{Restarting: true, Time: 120,
				Families: []GracefulRestartFamily{{Family: IPv4Unicast, Forwarding: true}}},
			FourOctetAS: true,
			AddPath:     []AddPath{{Family: IPv4Unicast, Mode: AddPathSend}},
		}}).AppendTo,
		want: marker + "0041 01" + // length 65
			"04 5ba0 0000 c6120002" + // My AS 23456 (AS_TRANS), no hold time
			"24 02 22" + // 36 bytes of parameters, capabilities of 34
			"01 04 0001 00 01" +
			"05 06 0001 0001 0002" + // extended next hop: IPv4 unicast (SAFI in two octets), IPv6 next hop (RFC 8950 3)
			"40 06 8078 0001 01 80" + // graceful restart: R bit, 120 s; IPv4 unicast with F bit (RFC 4724 3)
			"41 04 fa56ea01" +
			"45 04 0001 01 02", // add-path: IPv4 unicast, send (RFC 7911 4)
	}, {
		name: "update: IPv4 unicast, classic NLRI and NEXT_HOP",
		encode: (&Update{Family: IPv4Unicast, Attrs: v4attrs, NextHop: netip.MustParseAddr("198.18.0.10"),
			Options: Options{FourOctetAS: true},
			Reach: []NLRI{
				{Prefix: netip.MustParsePrefix("198.18.1.0/24")},
				{Prefix: netip.MustParsePrefix("198.18.2.7/32")},
			}}).AppendTo,
		want: marker + "003b 02" + // length 59
			"0000" + // no withdrawn routes
			"001b" + // 27 bytes of attributes
			"40 01 01 00" + // ORIGIN IGP, well-known transitive
			"40 02 06 02 01 0000fde9" + // AS_PATH: one AS_SEQUENCE of one four-octet AS
			"40 03 04 c612000a" + // NEXT_HOP
			"c0 08 04 fde90064" + // COMMUNITIES, optional transitive: 65001:100
			"18 c61201" + // 198.18.1.0/24: three octets
			"20 c6120207", // 198.18.2.7/32
	}, {
		name: "update: IPv6 unicast in MP_REACH_NLRI, iBGP",
		encode: (&Update{Family: IPv6Unicast, Attrs: ibgp, NextHop: netip.MustParseAddr("2001:db8::1"),
			Reach: []NLRI{{Prefix: netip.MustParsePrefix("2001:db8:1::/48")}}}).AppendTo,
		want: marker + "0044 02" + // length 68
			"0000 002d" + // 45 bytes of attributes
			"80 0e 1c" + // MP_REACH_NLRI, optional non-transitive, 28 bytes, first (RFC 7606 5.1)
			"0002 01 10 20010db8000000000000000000000001 00" + // AFI, SAFI, next hop of 16, reserved
			"30 20010db80001" + // 2001:db8:1::/48
			"40 01 01 00" +
			"40 02 00" + // empty AS_PATH (iBGP)
			"40 05 04 00000064", // LOCAL_PREF 100
	}, {
		name:   "end-of-rib: IPv4 unicast, an empty UPDATE (RFC 4724 2)",
		encode: func(b []byte) ([]byte, error) { return AppendEndOfRIB(b, IPv4Unicast), nil },
		want:   marker + "0017 02 0000 0000",
	}, {
		name:   "end-of-rib: IPv6 unicast, an empty MP_UNREACH_NLRI",
		encode: func(b []byte) ([]byte, error) { return AppendEndOfRIB(b, IPv6Unicast), nil },
		want:   marker + "001d 02 0000 0006 80 0f 03 0002 01",
	}, {
		name: "update: IPv4 unicast with an IPv6 and a link-local next hop (RFC 8950 in MP_REACH_NLRI), add-path",
		encode: (&Update{Family: IPv4Unicast, Attrs: &Attributes{ASPath: []uint32{65001}},
			NextHop: netip.MustParseAddr("2001:db8::1"), LinkLocalNextHop: netip.MustParseAddr("fe80::1"),
			Options: Options{AddPath: true},
			Reach:   []NLRI{{Prefix: netip.MustParsePrefix("198.18.1.0/24"), ID: 7}}}).AppendTo,
		want: marker + "0052 02" + // length 82
			"0000 003b" + // 59 bytes of attributes
			"80 0e 2d" + // 45 bytes
			"0001 01 20" + // AFI 1, SAFI 1, next hop of 32
			"20010db8000000000000000000000001 fe800000000000000000000000000001 00" +
			"00000007 18 c61201" + // path identifier 7, 198.18.1.0/24
			"40 01 01 00" +
			"40 02 04 02 01 fde9", // two-octet AS_PATH, as four-octet AS is not negotiated
	}, {
		name: "update: IPv6 withdrawal in MP_UNREACH_NLRI",
		encode: (&Update{Family: IPv6Unicast,
			Withdrawn: []NLRI{{Prefix: netip.MustParsePrefix("2001:db8:2::/64")}}}).AppendTo,
		want: marker + "0026 02 0000 000f 80 0f 0c 0002 01 40 20010db800020000",
	}, {
		name:   "notification: cease, administrative shutdown with a communication (RFC 9003)",
		encode: func(b []byte) ([]byte, error) { n := Shutdown("bye"); return n.AppendTo(b), nil },
		want:   marker + "0019 03 06 02 03 627965",
	}, {
		name: "route refresh: IPv6 unicast (RFC 2918 3)",
		encode: func(b []byte) ([]byte, error) {
			return (&RouteRefresh{Family: IPv6Unicast}).AppendTo(b), nil
		},
		want: marker + "0017 05 0002 00 01",
	}, {
		name: "update: link bandwidth extended community",
		encode: (&Update{Family: IPv4Unicast, NextHop: netip.MustParseAddr("198.18.0.10"),
			Attrs: &Attributes{ExtendedCommunities: []ExtendedCommunity{
				LinkBandwidth(community.LinkBandwidth{AS: 65001, BytesPerSecond: 125000})}},
			Reach: []NLRI{{Prefix: netip.MustParsePrefix("198.18.4.0/23")}}}).AppendTo,
		want: marker + "0034 02 0000 0019" +
			"40 01 01 00 40 02 00 40 03 04 c612000a" +
			"c0 10 08 40 04 fde9 47f42400" + // type 0x40 sub-type 4, AS, 125000.0 as IEEE 754 single
			"17 c61204",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := unhex(t, tt.want)
			prefix := []byte("kept")
			got, err := tt.encode(prefix)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			if !bytes.HasPrefix(got, prefix) {
				t.Fatalf("encode did not append")
			}
			got = got[len(prefix):]
			if !bytes.Equal(got, want) {
				t.Fatalf("encoded\n %x\nwant\n %x", got, want)
			}
			// Every golden message reads back as one whole message.
			typ, body, rest, err := Split(got)
			if err != nil || len(rest) != 0 || len(body) != len(got)-HeaderLen {
				t.Fatalf("Split: %v type %v body %d rest %d", err, typ, len(body), len(rest))
			}
		})
	}
}
