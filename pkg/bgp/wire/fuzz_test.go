package wire

import (
	"errors"
	"net/netip"
	"reflect"
	"testing"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/community"
)

// sentinels are the errors a decoder's errors wrap.
var sentinels = []error{ErrTruncated, ErrMarker, ErrLength, ErrType, ErrVersion, ErrHoldTime, ErrIdentifier, ErrMalformed}

func checkSentinel(t *testing.T, what string, err error) {
	t.Helper()
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return
		}
	}
	t.Fatalf("%s: error %v wraps no sentinel", what, err)
}

// seedMessages are valid messages of every kind, for the fuzzers to start
// from.
func seedMessages(f *testing.F) [][]byte {
	f.Helper()
	open := Open{ASN: 4200000001, HoldTime: 90, ID: netip.MustParseAddr("198.18.0.1"), Capabilities: Capabilities{
		Families: []Family{IPv4Unicast, IPv6Unicast}, RouteRefresh: true, FourOctetAS: true,
		ExtendedNextHop: []ExtendedNextHop{{Family: IPv4Unicast, NextHopAFI: AFIIPv6}},
		GracefulRestart: &GracefulRestart{Time: 120, Families: []GracefulRestartFamily{{Family: IPv4Unicast}}},
		AddPath:         []AddPath{{Family: IPv4Unicast, Mode: AddPathBoth}},
	}}
	o, err := open.AppendTo(nil)
	if err != nil {
		f.Fatal(err)
	}
	out := [][]byte{o, AppendKeepalive(nil), AppendEndOfRIB(nil, IPv4Unicast), AppendEndOfRIB(nil, IPv6Unicast)}
	n := Shutdown("bye")
	out = append(out, n.AppendTo(nil), (&RouteRefresh{Family: IPv6Unicast}).AppendTo(nil))
	attrs := &Attributes{ASPath: []uint32{65001}, Communities: []community.Community{1}}
	for _, u := range []Update{
		{Family: IPv4Unicast, Attrs: attrs, NextHop: netip.MustParseAddr("198.18.0.1"), Reach: hostRoutes(3, false), Withdrawn: hostRoutes(2, false)},
		{Family: IPv6Unicast, Attrs: attrs, NextHop: netip.MustParseAddr("2001:db8::1"), LinkLocalNextHop: netip.MustParseAddr("fe80::1"), Reach: hostRoutes(3, true)},
		{Family: IPv6Unicast, Withdrawn: hostRoutes(3, true)},
		{Family: IPv4Unicast, Attrs: attrs, NextHop: netip.MustParseAddr("2001:db8::1"), Reach: hostRoutes(3, false), Options: Options{AddPath: true}},
	} {
		b, err := u.AppendTo(nil)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// FuzzDecode: the decoders never panic nor read out of range on any
// input, their errors wrap a sentinel, and what they accept encodes again
// to what decodes the same (OPEN, NOTIFICATION, ROUTE-REFRESH).
func FuzzDecode(f *testing.F) {
	for _, m := range seedMessages(f) {
		f.Add(m)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for len(b) > 0 {
			typ, body, rest, err := Split(b)
			if err != nil {
				checkSentinel(t, "Split", err)
				return
			}
			b = rest
			switch typ {
			case TypeOpen:
				fuzzOpen(t, body)
			case TypeUpdate:
				for _, addPath := range [][]Family{nil, {IPv4Unicast, IPv6Unicast}} {
					if _, err := DecodeUpdate(body, addPath); err != nil {
						checkSentinel(t, "DecodeUpdate", err)
					}
				}
			case TypeNotification:
				n, err := DecodeNotification(body)
				if err != nil {
					checkSentinel(t, "DecodeNotification", err)
					continue
				}
				_ = n.String()
				_, again, _, err := Split(n.AppendTo(nil))
				if err != nil {
					t.Fatalf("notification %v encodes to what does not split: %v", n, err)
				}
				if m, err := DecodeNotification(again); err != nil || !reflect.DeepEqual(m, n) {
					t.Fatalf("notification %v read back as %v, %v", n, m, err)
				}
			case TypeRouteRefresh:
				r, err := DecodeRouteRefresh(body)
				if err != nil {
					checkSentinel(t, "DecodeRouteRefresh", err)
					continue
				}
				_, again, _, _ := Split(r.AppendTo(nil))
				if s, err := DecodeRouteRefresh(again); err != nil || s != r {
					t.Fatalf("route refresh %v read back as %v, %v", r, s, err)
				}
			}
		}
	})
}

func fuzzOpen(t *testing.T, body []byte) {
	m, err := DecodeOpen(body)
	if err != nil {
		checkSentinel(t, "DecodeOpen", err)
		return
	}
	b, err := m.AppendTo(nil)
	if err != nil {
		// Capabilities the encoder cannot write again (more than fit
		// in one parameter) or did not check (mode of add-path) only.
		if !errors.Is(err, ErrTooBig) && !errors.Is(err, ErrInvalid) {
			t.Fatalf("open %+v: %v", m, err)
		}
		return
	}
	_, again, _, err := Split(b)
	if err != nil {
		t.Fatalf("open %+v encodes to what does not split: %v", m, err)
	}
	n, err := DecodeOpen(again)
	if err != nil {
		t.Fatalf("open %+v read back: %v", m, err)
	}
	m.Unknown = nil // not encoded
	if !reflect.DeepEqual(m, n) {
		t.Fatalf("open\n %+v\nread back as\n %+v", m, n)
	}
}

// FuzzDecodePacked: routes made of the input, packed and withdrawn, read
// back as many routes with the same options.
func FuzzDecodePacked(f *testing.F) {
	f.Add([]byte{198, 18, 1, 0, 24, 2, 0, 1}, false, false)
	f.Add([]byte{0x20, 0x01, 0x0d, 0xb8, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 64, 5}, true, true)
	f.Fuzz(func(t *testing.T, in []byte, v6, addPath bool) {
		fam, size := IPv4Unicast, 4
		hop, ll := netip.MustParseAddr("198.18.0.1"), netip.Addr{}
		if v6 {
			fam, size = IPv6Unicast, 16
			hop, ll = netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("fe80::1")
		}
		var routes []NLRI
		for len(in) >= size+2 {
			a, _ := netip.AddrFromSlice(in[:size])
			bits := int(in[size]) % (8*size + 1)
			routes = append(routes, NLRI{Prefix: netip.PrefixFrom(a, bits), ID: uint32(in[size+1])})
			in = in[size+2:]
		}
		// Many of them, so that they take several messages.
		for len(routes) > 0 && len(routes) < 1000 {
			routes = append(routes, routes...)
		}
		o := Options{FourOctetAS: true, AddPath: addPath}
		var recv []Family
		if addPath {
			recv = []Family{fam}
		}
		p, err := NewPacker(fam, &Attributes{ASPath: []uint32{65001}}, hop, ll, o)
		if err != nil {
			t.Fatal(err)
		}
		b, err := p.Announce(nil, routes)
		if err != nil {
			t.Fatal(err)
		}
		if got := countUpdates(t, b, recv, false); got != len(routes) {
			t.Fatalf("%d routes announced, %d read", len(routes), got)
		}
		if b, err = AppendWithdraw(b[:0], fam, routes, o); err != nil {
			t.Fatal(err)
		}
		if got := countUpdates(t, b, recv, true); got != len(routes) {
			t.Fatalf("%d routes withdrawn, %d read", len(routes), got)
		}
	})
}

func countUpdates(t *testing.T, b []byte, addPath []Family, withdrawn bool) int {
	n := 0
	for len(b) > 0 {
		_, body, rest, err := Split(b)
		if err != nil {
			t.Fatal(err)
		}
		b = rest
		info, err := DecodeUpdate(body, addPath)
		if err != nil {
			t.Fatal(err)
		}
		if info.EndOfRIB {
			t.Fatalf("routes read as End-of-RIB")
		}
		if withdrawn {
			n += info.Withdrawn
		} else {
			n += info.Reach
		}
	}
	return n
}
