package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"testing"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/community"
)

// hostRoutes are n /32 (or /128) NLRI in 198.18.0.0/15 (or 2001:db8::/32)
// with path identifiers 1..n.
func hostRoutes(n int, v6 bool) []NLRI {
	out := make([]NLRI, n)
	for i := range out {
		var a netip.Addr
		if v6 {
			a = netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 14: byte(i >> 8), 15: byte(i)})
		} else {
			a = netip.AddrFrom4([4]byte{198, 18 + byte(i>>16&1), byte(i >> 8), byte(i)})
		}
		out[i] = NLRI{Prefix: netip.PrefixFrom(a, a.BitLen()), ID: uint32(i + 1)}
	}
	return out
}

// messages splits b into its messages, failing on any malformed one.
func messages(t *testing.T, b []byte) (types []Type, bodies [][]byte) {
	t.Helper()
	for len(b) > 0 {
		typ, body, rest, err := Split(b)
		if err != nil {
			t.Fatalf("Split: %v", err)
		}
		types, bodies, b = append(types, typ), append(bodies, body), rest
	}
	return types, bodies
}

func TestPacker(t *testing.T) {
	v4hop, v6hop := netip.MustParseAddr("198.18.0.10"), netip.MustParseAddr("2001:db8::10")
	ll := netip.MustParseAddr("fe80::10")
	big := &Attributes{
		ASPath:              []uint32{65001, 65001, 65001},
		Communities:         make([]community.Community, 70), // 280 bytes: extended length
		LargeCommunities:    []community.Large{{Global: 65001, Local1: 1, Local2: 2}},
		ExtendedCommunities: []ExtendedCommunity{LinkBandwidth(community.ForEndpoints(65001, 3))},
	}
	tests := []struct {
		family   Family
		attrs    *Attributes
		hop, ll  netip.Addr
		v6       bool
		n        int
		addPath  bool
		messages int
	}{
		{IPv4Unicast, &Attributes{}, v4hop, netip.Addr{}, false, 0, false, 0},
		{IPv4Unicast, &Attributes{}, v4hop, netip.Addr{}, false, 1, false, 1},
		// 4096 - 23 - 20 (ORIGIN 4, AS_PATH 9, NEXT_HOP 7) = 4053 bytes
		// of 5-byte NLRI: 810 a message.
		{IPv4Unicast, &Attributes{ASPath: []uint32{65001}}, v4hop, netip.Addr{}, false, 810, false, 1},
		{IPv4Unicast, &Attributes{ASPath: []uint32{65001}}, v4hop, netip.Addr{}, false, 811, false, 2},
		{IPv4Unicast, &Attributes{ASPath: []uint32{65001}}, v4hop, netip.Addr{}, false, 20000, true, 45},
		{IPv4Unicast, big, v4hop, netip.Addr{}, false, 3000, true, 8},
		{IPv4Unicast, &Attributes{}, v6hop, ll, false, 5000, false, 7},
		{IPv6Unicast, &Attributes{}, v6hop, netip.Addr{}, true, 1, false, 1},
		{IPv6Unicast, &Attributes{ASPath: []uint32{4200000001}}, v6hop, ll, true, 10000, true, 53},
		// 4096 - 23 - 331 of attributes - 25 of MP_REACH_NLRI before its NLRI
		// = 3717 bytes of 17-byte NLRI: 218 a message.
		{IPv6Unicast, big, v6hop, netip.Addr{}, true, 10000, false, 46},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%v-%v-%d-addpath-%v", tt.family, tt.hop, tt.n, tt.addPath), func(t *testing.T) {
			o := Options{FourOctetAS: true, AddPath: tt.addPath}
			p, err := NewPacker(tt.family, tt.attrs, tt.hop, tt.ll, o)
			if err != nil {
				t.Fatal(err)
			}
			routes := hostRoutes(tt.n, tt.v6)
			b, err := p.Announce(nil, routes)
			if err != nil {
				t.Fatal(err)
			}
			types, bodies := messages(t, b)
			if len(types) != tt.messages {
				t.Errorf("%d messages, want %d", len(types), tt.messages)
			}
			var addPath []Family
			if tt.addPath {
				addPath = []Family{tt.family}
			}
			total := 0
			for i, body := range bodies {
				if types[i] != TypeUpdate {
					t.Fatalf("message %d: %v", i, types[i])
				}
				info, err := DecodeUpdate(body, addPath)
				if err != nil {
					t.Fatalf("message %d: %v", i, err)
				}
				if info.EndOfRIB || info.Withdrawn != 0 || info.Reach == 0 {
					t.Fatalf("message %d: %+v", i, info)
				}
				total += info.Reach
				// Full: all but the last have no room for one more.
				if i < len(bodies)-1 && HeaderLen+len(body)+nlriLen(routes[0].Prefix, tt.addPath) <= MaxMessageLen {
					t.Errorf("message %d of %d bytes not full", i, HeaderLen+len(body))
				}
			}
			if total != tt.n {
				t.Errorf("%d routes sent, want %d", total, tt.n)
			}

			w, err := AppendWithdraw(nil, tt.family, routes, o)
			if err != nil {
				t.Fatal(err)
			}
			_, bodies = messages(t, w)
			total = 0
			for i, body := range bodies {
				info, err := DecodeUpdate(body, addPath)
				if err != nil {
					t.Fatalf("withdrawal %d: %v", i, err)
				}
				if info.EndOfRIB || info.Reach != 0 {
					t.Fatalf("withdrawal %d: %+v", i, info)
				}
				total += info.Withdrawn
				if i < len(bodies)-1 && HeaderLen+len(body)+nlriLen(routes[0].Prefix, tt.addPath) <= MaxMessageLen {
					t.Errorf("withdrawal %d of %d bytes not full", i, HeaderLen+len(body))
				}
			}
			if total != tt.n {
				t.Errorf("%d routes withdrawn, want %d", total, tt.n)
			}
		})
	}
}

func TestPackerErrors(t *testing.T) {
	v4hop, v6hop := netip.MustParseAddr("198.18.0.10"), netip.MustParseAddr("2001:db8::10")
	tests := []struct {
		name    string
		family  Family
		attrs   *Attributes
		hop, ll netip.Addr
	}{
		{"unknown family", Family{AFI: 25, SAFI: 65}, &Attributes{}, v4hop, netip.Addr{}},
		{"no next hop", IPv4Unicast, &Attributes{}, netip.Addr{}, netip.Addr{}},
		{"unspecified next hop", IPv4Unicast, &Attributes{}, netip.IPv4Unspecified(), netip.Addr{}},
		{"IPv4 next hop for IPv6", IPv6Unicast, &Attributes{}, v4hop, netip.Addr{}},
		{"mapped next hop", IPv6Unicast, &Attributes{}, netip.MustParseAddr("::ffff:198.18.0.1"), netip.Addr{}},
		{"global as link-local", IPv6Unicast, &Attributes{}, v6hop, v6hop},
		{"link-local with an IPv4 next hop", IPv4Unicast, &Attributes{}, v4hop, netip.MustParseAddr("fe80::1")},
		{"bad origin", IPv4Unicast, &Attributes{Origin: 3}, v4hop, netip.Addr{}},
		{"attributes too big", IPv4Unicast, &Attributes{Communities: make([]community.Community, 1100)}, v4hop, netip.Addr{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewPacker(tt.family, tt.attrs, tt.hop, tt.ll, Options{})
			if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrTooBig) {
				t.Fatalf("error %v", err)
			}
			u := Update{Family: tt.family, Attrs: tt.attrs, NextHop: tt.hop, LinkLocalNextHop: tt.ll,
				Reach: hostRoutes(1, tt.family == IPv6Unicast)}
			b, err := u.AppendTo([]byte{1})
			if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrTooBig) {
				t.Fatalf("Update error %v", err)
			}
			if len(b) != 1 {
				t.Fatalf("Update left %d bytes appended", len(b)-1)
			}
		})
	}

	p, err := NewPacker(IPv4Unicast, &Attributes{}, v4hop, netip.Addr{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	mixed := append(hostRoutes(1000, false), hostRoutes(1, true)...)
	if b, err := p.Announce([]byte{1}, mixed); !errors.Is(err, ErrInvalid) || len(b) != 1 {
		t.Errorf("IPv6 prefix in IPv4 packer: %v, %d bytes", err, len(b))
	}
	if b, err := AppendWithdraw([]byte{1}, IPv6Unicast, mixed, Options{}); !errors.Is(err, ErrInvalid) || len(b) != 1 {
		t.Errorf("IPv4 prefix in IPv6 withdrawal: %v, %d bytes", err, len(b))
	}
	if b, err := AppendWithdraw([]byte{1}, IPv4Unicast, []NLRI{{}}, Options{}); !errors.Is(err, ErrInvalid) || len(b) != 1 {
		t.Errorf("invalid prefix: %v, %d bytes", err, len(b))
	}
	if _, err := AppendWithdraw(nil, Family{AFI: 3, SAFI: 1}, nil, Options{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("unknown family: %v", err)
	}
	u := Update{Family: IPv4Unicast, Reach: hostRoutes(1, false), NextHop: v4hop}
	if _, err := u.AppendTo(nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("routes without attributes: %v", err)
	}
	u = Update{Family: IPv4Unicast, Withdrawn: hostRoutes(1000, false)}
	if b, err := u.AppendTo([]byte{1}); !errors.Is(err, ErrTooBig) || len(b) != 1 {
		t.Errorf("1000 withdrawals in one message: %v", err)
	}
}

func TestASPath(t *testing.T) {
	long := make([]uint32, 300)
	for i := range long {
		long[i] = 65001
	}
	tests := []struct {
		name string
		path []uint32
		four bool
		want string // the attributes after ORIGIN
	}{
		{"empty", nil, true, "40 02 00"},
		{"four-octet", []uint32{65001, 4200000001}, true, "40 02 0a 02 02 0000fde9 fa56ea01"},
		{"two-octet", []uint32{65001, 65002}, false, "40 02 06 02 02 fde9 fdea"},
		// RFC 6793 4.2.2: AS_TRANS in AS_PATH, the real path in AS4_PATH.
		{"two-octet session, four-octet AS", []uint32{4200000001, 65001}, false,
			"40 02 06 02 02 5ba0 fde9 c0 11 0a 02 02 fa56ea01 0000fde9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := Attributes{ASPath: tt.path}
			b, err := a.appendTo(nil, Options{FourOctetAS: tt.four}, netip.Addr{})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := b[4:], unhex(t, tt.want); string(got) != string(want) {
				t.Fatalf("got %x\nwant %x", got, want)
			}
		})
	}
	// 300 AS numbers: segments of 255 and 45, extended length.
	a := Attributes{ASPath: long}
	b, err := a.appendTo(nil, Options{FourOctetAS: true}, netip.Addr{})
	if err != nil {
		t.Fatal(err)
	}
	b = b[4:]
	if b[0] != wellKnown|flagExtLength || b[1] != attrASPath || int(binary.BigEndian.Uint16(b[2:])) != 2*2+4*300 {
		t.Fatalf("header % x", b[:4])
	}
	if b[4] != asSequence || b[5] != 255 || b[6+4*255] != asSequence || b[7+4*255] != 45 {
		t.Fatalf("segments wrong")
	}
}

func TestDecodeUpdate(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		addPath []Family
		want    UpdateInfo
		err     error
	}{
		{name: "IPv4 end-of-rib", body: "0000 0000", want: UpdateInfo{EndOfRIB: true, Family: IPv4Unicast}},
		{name: "IPv6 end-of-rib", body: "0000 0006 80 0f 03 0002 01",
			want: UpdateInfo{EndOfRIB: true, Family: IPv6Unicast, Attributes: 1}},
		{name: "IPv6 end-of-rib, extended length", body: "0000 0007 90 0f 0003 0002 01",
			want: UpdateInfo{EndOfRIB: true, Family: IPv6Unicast, Attributes: 1}},
		{name: "end-of-rib of another family", body: "0000 0006 80 0f 03 0001 80",
			want: UpdateInfo{EndOfRIB: true, Family: Family{AFI: 1, SAFI: 128}, Attributes: 1}},
		{name: "an IPv6 withdrawal is no end-of-rib", body: "0000 0008 80 0f 05 0002 01 08 20",
			want: UpdateInfo{Withdrawn: 1, Attributes: 1}},
		{name: "an empty MP_UNREACH_NLRI beside other attributes is no end-of-rib", body: "0000 000a 80 0f 03 0002 01 40 01 01 00",
			want: UpdateInfo{Attributes: 2}},
		{name: "routes", body: "0002 00 00 0007 40 01 01 00 40 02 00 18 c61201 00 20 c6120207",
			want: UpdateInfo{Withdrawn: 2, Reach: 3, Attributes: 2}},
		{name: "routes with path identifiers", body: "0005 00000001 00 0000 00000002 18 c61201", addPath: []Family{IPv4Unicast},
			want: UpdateInfo{Withdrawn: 1, Reach: 1}},
		{name: "MP_REACH_NLRI of an unknown family skipped", body: "0000 000a 80 0e 07 0019 41 01 00 00 ff",
			want: UpdateInfo{Attributes: 1}},
		{name: "MP_REACH_NLRI IPv6", body: "0000 001d 80 0e 1a 0002 01 10 20010db8000000000000000000000001 00 20 20010db8",
			want: UpdateInfo{Reach: 1, Attributes: 1}},
		{name: "short", body: "0000 00", err: ErrTruncated},
		{name: "withdrawn past the end", body: "0005 0000 00", err: ErrLength},
		{name: "attributes past the end", body: "0000 0005 40 01 01 00", err: ErrLength},
		{name: "attribute header cut", body: "0000 0002 40 01", err: ErrTruncated},
		{name: "extended attribute header cut", body: "0000 0003 50 01 00", err: ErrTruncated},
		{name: "attribute past its field", body: "0000 0004 40 01 05 00", err: ErrLength},
		{name: "prefix longer than 32 bits", body: "0000 0000 21 c6120207 00", err: ErrMalformed},
		{name: "prefix cut", body: "0000 0000 18 c612", err: ErrTruncated},
		{name: "withdrawn prefix cut", body: "0002 18 c6 0000", err: ErrTruncated},
		{name: "path identifier cut", body: "0000 0000 000001", addPath: []Family{IPv4Unicast}, err: ErrTruncated},
		{name: "MP_REACH_NLRI next hop past its end", body: "0000 0008 80 0e 05 0002 01 10 00", err: ErrLength},
		{name: "MP_REACH_NLRI of 4 bytes", body: "0000 0007 80 0e 04 0002 01 00", err: ErrLength},
		{name: "MP_REACH_NLRI next hop of 5 bytes", body: "0000 000d 80 0e 0a 0002 01 05 0000000000 00", err: ErrMalformed},
		{name: "MP_REACH_NLRI prefix over 128 bits", body: "0000 0019 80 0e 16 0002 01 10 20010db8000000000000000000000001 00 81", err: ErrMalformed},
		{name: "MP_UNREACH_NLRI of 2 bytes", body: "0000 0005 80 0f 02 0002", err: ErrLength},
		{name: "MP_UNREACH_NLRI prefix cut", body: "0000 0007 80 0f 04 0002 01 40", err: ErrTruncated},
		{name: "two MP_UNREACH_NLRI", body: "0000 000c 80 0f 03 0002 01 80 0f 03 0002 01", err: ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeUpdate(unhex(t, tt.body), tt.addPath)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("error %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestPackerMatchesUpdate: a packed message is the Update of the same
// routes, byte for byte, so that either may encode what the other does.
func TestPackerMatchesUpdate(t *testing.T) {
	attrs := &Attributes{ASPath: []uint32{65001}, Communities: []community.Community{1, 2}, HasLocalPref: true, LocalPref: 5}
	for _, u := range []Update{
		{Family: IPv4Unicast, NextHop: netip.MustParseAddr("198.18.0.1")},
		{Family: IPv4Unicast, NextHop: netip.MustParseAddr("2001:db8::1"), Options: Options{AddPath: true}},
		{Family: IPv6Unicast, NextHop: netip.MustParseAddr("2001:db8::1"), LinkLocalNextHop: netip.MustParseAddr("fe80::1")},
		{Family: IPv6Unicast, NextHop: netip.MustParseAddr("2001:db8::1"), Options: Options{FourOctetAS: true, AddPath: true}},
	} {
		t.Run(fmt.Sprintf("%v-%v", u.Family, u.NextHop), func(t *testing.T) {
			u.Attrs = attrs
			u.Reach = hostRoutes(100, u.Family == IPv6Unicast)
			want, err := u.AppendTo(nil)
			if err != nil {
				t.Fatal(err)
			}
			p, err := NewPacker(u.Family, attrs, u.NextHop, u.LinkLocalNextHop, u.Options)
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.Announce(nil, u.Reach)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Fatalf("packed\n %x\nUpdate\n %x", got, want)
			}
			w := Update{Family: u.Family, Withdrawn: u.Reach, Options: u.Options}
			if want, err = w.AppendTo(nil); err != nil {
				t.Fatal(err)
			}
			if got, err = AppendWithdraw(nil, u.Family, u.Reach, u.Options); err != nil || string(got) != string(want) {
				t.Fatalf("withdrawn\n %x, %v\nUpdate\n %x", got, err, want)
			}
		})
	}
}

// TestPackerAllocations: packing into a buffer with room allocates
// nothing, which is what lets a speaker encode every peer's UPDATEs from
// one path store without garbage per route.
func TestPackerAllocations(t *testing.T) {
	routes := hostRoutes(5000, true)
	p, err := NewPacker(IPv6Unicast, &Attributes{ASPath: []uint32{65001}}, netip.MustParseAddr("2001:db8::1"),
		netip.MustParseAddr("fe80::1"), Options{FourOctetAS: true, AddPath: true})
	if err != nil {
		t.Fatal(err)
	}
	buf, err := p.Announce(nil, routes)
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(10, func() {
		if buf, err = p.Announce(buf[:0], routes); err != nil {
			t.Fatal(err)
		}
		if buf, err = AppendWithdraw(buf[:0], IPv6Unicast, routes, Options{AddPath: true}); err != nil {
			t.Fatal(err)
		}
		buf = AppendEndOfRIB(AppendKeepalive(buf[:0]), IPv6Unicast)
	})
	if allocs != 0 {
		t.Errorf("%v allocations", allocs)
	}
}
