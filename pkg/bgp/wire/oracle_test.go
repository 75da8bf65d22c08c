package wire

// Oracle tests: GoBGP, the speaker's BGP implementation until this package
// replaces it, reads what this package encodes, and encodes what this
// package reads, so that the two agree on the wire format without this
// package's tests agreeing with themselves.

import (
	"math"
	"net/netip"
	"reflect"
	"slices"
	"testing"

	"github.com/osrg/gobgp/v4/pkg/packet/bgp"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/community"
)

func gobgpFamily(f Family) bgp.Family { return bgp.NewFamily(f.AFI, f.SAFI) }

// gobgpOptions are GoBGP's options for reading (receive) or writing
// (send) with path identifiers in families.
func gobgpOptions(mode bgp.BGPAddPathMode, twoOctetAS bool, families ...Family) *bgp.MarshallingOption {
	o := &bgp.MarshallingOption{AddPath: map[bgp.Family]bgp.BGPAddPathMode{}, Use2ByteAS: twoOctetAS}
	for _, f := range families {
		o.AddPath[gobgpFamily(f)] = mode
	}
	return o
}

// fromGobgp reads GoBGP's NLRI back as prefixes with identifiers.
func fromGobgp(t *testing.T, ps []bgp.PathNLRI) []NLRI {
	t.Helper()
	out := make([]NLRI, 0, len(ps))
	for _, p := range ps {
		pfx, err := netip.ParsePrefix(p.NLRI.String())
		if err != nil {
			t.Fatalf("GoBGP NLRI %q: %v", p.NLRI.String(), err)
		}
		out = append(out, NLRI{Prefix: pfx, ID: p.ID})
	}
	return out
}

func toGobgp(t *testing.T, rs []NLRI) []bgp.PathNLRI {
	t.Helper()
	out := make([]bgp.PathNLRI, 0, len(rs))
	for _, r := range rs {
		n, err := bgp.NewIPAddrPrefix(r.Prefix)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, bgp.PathNLRI{NLRI: n, ID: r.ID})
	}
	return out
}

func parseGobgp(t *testing.T, b []byte, o *bgp.MarshallingOption) *bgp.BGPMessage {
	t.Helper()
	m, err := bgp.ParseBGPMessage(b, o)
	if err != nil {
		t.Fatalf("GoBGP cannot read % x: %v", b, err)
	}
	return m
}

func TestOracleOpen(t *testing.T) {
	open := Open{ASN: 4200000001, HoldTime: 90, ID: netip.MustParseAddr("198.18.0.1"), Capabilities: Capabilities{
		Families:        []Family{IPv4Unicast, IPv6Unicast},
		RouteRefresh:    true,
		FourOctetAS:     true,
		ExtendedNextHop: []ExtendedNextHop{{Family: IPv4Unicast, NextHopAFI: AFIIPv6}},
		GracefulRestart: &GracefulRestart{Restarting: true, Time: 300, Families: []GracefulRestartFamily{
			{Family: IPv4Unicast, Forwarding: true}, {Family: IPv6Unicast}}},
		AddPath: []AddPath{{Family: IPv4Unicast, Mode: AddPathSend}, {Family: IPv6Unicast, Mode: AddPathBoth}},
	}}
	t.Run("ours read by GoBGP", func(t *testing.T) {
		b, err := open.AppendTo(nil)
		if err != nil {
			t.Fatal(err)
		}
		o := parseGobgp(t, b, nil).Body.(*bgp.BGPOpen)
		if o.Version != 4 || o.MyAS != ASTrans || o.HoldTime != 90 || o.ID != open.ID {
			t.Fatalf("GoBGP read %+v", o)
		}
		var families []Family
		seen := map[bgp.BGPCapabilityCode]bool{}
		for _, p := range o.OptParams {
			for _, c := range p.(*bgp.OptionParameterCapability).Capability {
				seen[c.Code()] = true
				switch c := c.(type) {
				case *bgp.CapMultiProtocol:
					families = append(families, Family{AFI: c.CapValue.Afi(), SAFI: c.CapValue.Safi()})
				case *bgp.CapFourOctetASNumber:
					if c.CapValue != open.ASN {
						t.Errorf("four-octet AS %d", c.CapValue)
					}
				case *bgp.CapGracefulRestart:
					want := []*bgp.CapGracefulRestartTuple{
						bgp.NewCapGracefulRestartTuple(bgp.RF_IPv4_UC, true),
						bgp.NewCapGracefulRestartTuple(bgp.RF_IPv6_UC, false),
					}
					if c.Flags != 0x08 || c.Time != 300 || !reflect.DeepEqual(c.Tuples, want) {
						t.Errorf("graceful restart flags %x time %d tuples %+v", c.Flags, c.Time, c.Tuples)
					}
				case *bgp.CapAddPath:
					want := []*bgp.CapAddPathTuple{
						bgp.NewCapAddPathTuple(bgp.RF_IPv4_UC, bgp.BGP_ADD_PATH_SEND),
						bgp.NewCapAddPathTuple(bgp.RF_IPv6_UC, bgp.BGP_ADD_PATH_BOTH),
					}
					if !reflect.DeepEqual(c.Tuples, want) {
						t.Errorf("add-path %+v", c.Tuples)
					}
				case *bgp.CapExtendedNexthop:
					want := []*bgp.CapExtendedNexthopTuple{bgp.NewCapExtendedNexthopTuple(bgp.RF_IPv4_UC, AFIIPv6)}
					if !reflect.DeepEqual(c.Tuples, want) {
						t.Errorf("extended next hop %+v", c.Tuples)
					}
				case *bgp.CapRouteRefresh:
				default:
					t.Errorf("unexpected capability %T", c)
				}
			}
		}
		if !reflect.DeepEqual(families, open.Families) {
			t.Errorf("families %v", families)
		}
		for _, code := range []bgp.BGPCapabilityCode{bgp.BGP_CAP_MULTIPROTOCOL, bgp.BGP_CAP_ROUTE_REFRESH, bgp.BGP_CAP_FOUR_OCTET_AS_NUMBER,
			bgp.BGP_CAP_GRACEFUL_RESTART, bgp.BGP_CAP_ADD_PATH, bgp.BGP_CAP_EXTENDED_NEXTHOP} {
			if !seen[code] {
				t.Errorf("capability %d missing", code)
			}
		}
	})
	t.Run("GoBGP's read by ours", func(t *testing.T) {
		caps := []bgp.ParameterCapabilityInterface{
			bgp.NewCapMultiProtocol(bgp.RF_IPv4_UC),
			bgp.NewCapMultiProtocol(bgp.RF_IPv6_UC),
			bgp.NewCapRouteRefresh(),
			bgp.NewCapEnhancedRouteRefresh(),
			bgp.NewCapFourOctetASNumber(4200000002),
			bgp.NewCapGracefulRestart(false, true, 120, []*bgp.CapGracefulRestartTuple{
				bgp.NewCapGracefulRestartTuple(bgp.RF_IPv6_UC, true)}),
			bgp.NewCapAddPath([]*bgp.CapAddPathTuple{bgp.NewCapAddPathTuple(bgp.RF_IPv4_UC, bgp.BGP_ADD_PATH_RECEIVE)}),
			bgp.NewCapExtendedNexthop([]*bgp.CapExtendedNexthopTuple{bgp.NewCapExtendedNexthopTuple(bgp.RF_IPv4_UC, AFIIPv6)}),
			bgp.NewCapFQDN("router", "example.org"),
			bgp.NewCapLongLivedGracefulRestart(nil),
		}
		m, err := bgp.NewBGPOpenMessage(ASTrans, 180, netip.MustParseAddr("198.18.0.2"),
			[]bgp.OptionParameterInterface{bgp.NewOptionParameterCapability(caps)})
		if err != nil {
			t.Fatal(err)
		}
		b, err := m.Serialize()
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
		want := &Open{ASN: 4200000002, HoldTime: 180, ID: netip.MustParseAddr("198.18.0.2"), Capabilities: Capabilities{
			Families:        []Family{IPv4Unicast, IPv6Unicast},
			RouteRefresh:    true,
			FourOctetAS:     true,
			GracefulRestart: &GracefulRestart{Notification: true, Time: 120, Families: []GracefulRestartFamily{{Family: IPv6Unicast, Forwarding: true}}},
			AddPath:         []AddPath{{Family: IPv4Unicast, Mode: AddPathReceive}},
			ExtendedNextHop: []ExtendedNextHop{{Family: IPv4Unicast, NextHopAFI: AFIIPv6}},
			Unknown:         []uint8{uint8(bgp.BGP_CAP_ENHANCED_ROUTE_REFRESH), uint8(bgp.BGP_CAP_FQDN), uint8(bgp.BGP_CAP_LONG_LIVED_GRACEFUL_RESTART)},
		}}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("decoded\n %+v\nwant\n %+v", got, want)
		}
	})
}

// gobgpAttrs are GoBGP's reading of an UPDATE's attributes, by type.
func gobgpAttrs(u *bgp.BGPUpdate) map[bgp.BGPAttrType]bgp.PathAttributeInterface {
	out := map[bgp.BGPAttrType]bgp.PathAttributeInterface{}
	for _, a := range u.PathAttributes {
		out[a.GetType()] = a
	}
	return out
}

func TestOracleUpdate(t *testing.T) {
	lb := community.ForEndpoints(65001, 3)
	attrs := &Attributes{
		Origin:              OriginIncomplete,
		ASPath:              []uint32{65001, 65001},
		LocalPref:           200,
		HasLocalPref:        true,
		Communities:         []community.Community{65001<<16 | 1, 0xFFFFFF01},
		ExtendedCommunities: []ExtendedCommunity{LinkBandwidth(lb)},
		LargeCommunities:    []community.Large{{Global: 4200000001, Local1: 1, Local2: 2}},
	}
	many := &Attributes{ASPath: []uint32{4200000001}, Communities: make([]community.Community, 80)}
	for i := range many.Communities {
		many.Communities[i] = community.Community(65001<<16 | i) //nolint:gosec // test values
	}
	v4hop, v6hop, ll := netip.MustParseAddr("198.18.0.10"), netip.MustParseAddr("2001:db8::10"), netip.MustParseAddr("fe80::10")
	tests := []struct {
		name    string
		family  Family
		attrs   *Attributes
		hop, ll netip.Addr
		opts    Options
		n       int
	}{
		{"IPv4", IPv4Unicast, attrs, v4hop, netip.Addr{}, Options{FourOctetAS: true}, 3},
		{"IPv4 add-path, several messages", IPv4Unicast, attrs, v4hop, netip.Addr{}, Options{FourOctetAS: true, AddPath: true}, 2000},
		{"IPv4 two-octet AS session, AS4_PATH", IPv4Unicast, many, v4hop, netip.Addr{}, Options{}, 900},
		{"IPv4 with IPv6 next hop", IPv4Unicast, attrs, v6hop, netip.Addr{}, Options{FourOctetAS: true}, 5},
		{"IPv4 with IPv6 and link-local next hops, add-path", IPv4Unicast, attrs, v6hop, ll, Options{FourOctetAS: true, AddPath: true}, 700},
		{"IPv6", IPv6Unicast, attrs, v6hop, netip.Addr{}, Options{FourOctetAS: true}, 4},
		{"IPv6 link-local, add-path, extended lengths", IPv6Unicast, many, v6hop, ll, Options{FourOctetAS: true, AddPath: true}, 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			routes := hostRoutes(tt.n, tt.family == IPv6Unicast)
			p, err := NewPacker(tt.family, tt.attrs, tt.hop, tt.ll, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			b, err := p.Announce(nil, routes)
			if err != nil {
				t.Fatal(err)
			}
			var addPath []Family
			if tt.opts.AddPath {
				addPath = []Family{tt.family}
			}
			o := gobgpOptions(bgp.BGP_ADD_PATH_RECEIVE, !tt.opts.FourOctetAS, addPath...)
			var got []NLRI
			for len(b) > 0 {
				_, _, rest, err := Split(b)
				if err != nil {
					t.Fatal(err)
				}
				u := parseGobgp(t, b[:len(b)-len(rest)], o).Body.(*bgp.BGPUpdate)
				b = rest
				if len(u.WithdrawnRoutes) != 0 {
					t.Fatalf("withdrawn routes %v", u.WithdrawnRoutes)
				}
				as := gobgpAttrs(u)
				checkGobgpAttrs(t, as, tt.attrs, tt.opts.FourOctetAS)
				if tt.family == IPv4Unicast && tt.hop.Is4() {
					if nh := as[bgp.BGP_ATTR_TYPE_NEXT_HOP].(*bgp.PathAttributeNextHop); nh.Value != tt.hop {
						t.Errorf("next hop %v", nh.Value)
					}
					got = append(got, fromGobgp(t, u.NLRI)...)
					continue
				}
				if len(u.NLRI) != 0 || as[bgp.BGP_ATTR_TYPE_NEXT_HOP] != nil {
					t.Fatalf("classic NLRI or NEXT_HOP with MP_REACH_NLRI")
				}
				mp := as[bgp.BGP_ATTR_TYPE_MP_REACH_NLRI].(*bgp.PathAttributeMpReachNLRI)
				if u.PathAttributes[0] != mp {
					t.Errorf("MP_REACH_NLRI not first")
				}
				if mp.AFI != tt.family.AFI || mp.SAFI != tt.family.SAFI || mp.Nexthop != tt.hop || mp.LinkLocalNexthop != tt.ll {
					t.Errorf("MP_REACH_NLRI %d/%d next hops %v %v", mp.AFI, mp.SAFI, mp.Nexthop, mp.LinkLocalNexthop)
				}
				got = append(got, fromGobgp(t, mp.Value)...)
			}
			if !tt.opts.AddPath {
				for i := range routes {
					routes[i].ID = 0
				}
			}
			if !slices.Equal(got, routes) {
				t.Fatalf("GoBGP read %d routes, want %d (first %v, want %v)", len(got), len(routes), got[:min(3, len(got))], routes[:min(3, len(routes))])
			}

			// Withdrawn, the same routes.
			w, err := AppendWithdraw(nil, tt.family, routes, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			got = got[:0]
			for len(w) > 0 {
				_, _, rest, err := Split(w)
				if err != nil {
					t.Fatal(err)
				}
				u := parseGobgp(t, w[:len(w)-len(rest)], o).Body.(*bgp.BGPUpdate)
				w = rest
				if eor, _ := u.IsEndOfRib(); eor || len(u.NLRI) != 0 {
					t.Fatalf("a withdrawal read as End-of-RIB or with NLRI")
				}
				got = append(got, fromGobgp(t, u.WithdrawnRoutes)...)
				if mp, ok := gobgpAttrs(u)[bgp.BGP_ATTR_TYPE_MP_UNREACH_NLRI].(*bgp.PathAttributeMpUnreachNLRI); ok {
					got = append(got, fromGobgp(t, mp.Value)...)
				}
			}
			if !slices.Equal(got, routes) {
				t.Fatalf("GoBGP read %d withdrawn routes, want %d", len(got), len(routes))
			}
		})
	}
}

// checkGobgpAttrs compares GoBGP's reading of the attributes with want.
func checkGobgpAttrs(t *testing.T, as map[bgp.BGPAttrType]bgp.PathAttributeInterface, want *Attributes, four bool) {
	t.Helper()
	if o := as[bgp.BGP_ATTR_TYPE_ORIGIN].(*bgp.PathAttributeOrigin); o.Value != uint8(want.Origin) {
		t.Errorf("origin %d", o.Value)
	}
	var path []uint32
	for _, seg := range as[bgp.BGP_ATTR_TYPE_AS_PATH].(*bgp.PathAttributeAsPath).Value {
		if seg.GetType() != bgp.BGP_ASPATH_ATTR_TYPE_SEQ {
			t.Errorf("segment type %d", seg.GetType())
		}
		path = append(path, seg.GetAS()...)
	}
	wantPath := want.ASPath
	if !four {
		// GoBGP keeps AS_PATH as sent: AS_TRANS for the large ones
		// (AS4_PATH checked below).
		wantPath = nil
		for _, asn := range want.ASPath {
			if asn > math.MaxUint16 {
				asn = ASTrans
			}
			wantPath = append(wantPath, asn)
		}
		if p, ok := as[bgp.BGP_ATTR_TYPE_AS4_PATH].(*bgp.PathAttributeAs4Path); ok {
			var as4 []uint32
			for _, seg := range p.Value {
				as4 = append(as4, seg.AS...)
			}
			if !slices.Equal(as4, want.ASPath) {
				t.Errorf("AS4_PATH %v", as4)
			}
		} else if !slices.Equal(wantPath, want.ASPath) {
			t.Errorf("no AS4_PATH")
		}
	}
	if !slices.Equal(path, wantPath) {
		t.Errorf("AS_PATH %v, want %v", path, wantPath)
	}
	if lp, ok := as[bgp.BGP_ATTR_TYPE_LOCAL_PREF].(*bgp.PathAttributeLocalPref); ok != want.HasLocalPref || (ok && lp.Value != want.LocalPref) {
		t.Errorf("local pref %v", lp)
	}
	var cs []community.Community
	if c, ok := as[bgp.BGP_ATTR_TYPE_COMMUNITIES].(*bgp.PathAttributeCommunities); ok {
		for _, v := range c.Value {
			cs = append(cs, community.Community(v))
		}
	}
	if !slices.Equal(cs, want.Communities) {
		t.Errorf("communities %v", cs)
	}
	var ls []community.Large
	if c, ok := as[bgp.BGP_ATTR_TYPE_LARGE_COMMUNITY].(*bgp.PathAttributeLargeCommunities); ok {
		for _, v := range c.Values {
			ls = append(ls, community.Large{Global: v.ASN, Local1: v.LocalData1, Local2: v.LocalData2})
		}
	}
	if !slices.Equal(ls, want.LargeCommunities) {
		t.Errorf("large communities %v", ls)
	}
	var es []ExtendedCommunity
	if c, ok := as[bgp.BGP_ATTR_TYPE_EXTENDED_COMMUNITIES].(*bgp.PathAttributeExtendedCommunities); ok {
		for _, v := range c.Value {
			if lb, ok := v.(*bgp.LinkBandwidthExtended); ok {
				es = append(es, LinkBandwidth(community.LinkBandwidth{AS: lb.AS, BytesPerSecond: lb.Bandwidth}))
			} else {
				t.Errorf("extended community %T %v", v, v)
			}
		}
	}
	if !slices.Equal(es, want.ExtendedCommunities) {
		t.Errorf("extended communities %v", es)
	}
}

func TestOracleEndOfRIB(t *testing.T) {
	for _, f := range []Family{IPv4Unicast, IPv6Unicast} {
		t.Run(f.String(), func(t *testing.T) {
			u := parseGobgp(t, AppendEndOfRIB(nil, f), nil).Body.(*bgp.BGPUpdate)
			if eor, fam := u.IsEndOfRib(); !eor || fam != gobgpFamily(f) {
				t.Errorf("GoBGP reads ours as %v %v", eor, fam)
			}
			b, err := bgp.NewEndOfRib(gobgpFamily(f)).Serialize()
			if err != nil {
				t.Fatal(err)
			}
			_, body, _, err := Split(b)
			if err != nil {
				t.Fatal(err)
			}
			info, err := DecodeUpdate(body, nil)
			if err != nil || !info.EndOfRIB || info.Family != f {
				t.Errorf("GoBGP's read as %+v, %v", info, err)
			}
		})
	}
}

func TestOracleGobgpUpdate(t *testing.T) {
	origin := bgp.NewPathAttributeOrigin(0)
	aspath := bgp.NewPathAttributeAsPath([]bgp.AsPathParamInterface{bgp.NewAs4PathParam(bgp.BGP_ASPATH_ATTR_TYPE_SEQ, []uint32{65002})})
	nh, err := bgp.NewPathAttributeNextHop(netip.MustParseAddr("198.18.0.20"))
	if err != nil {
		t.Fatal(err)
	}
	v4 := hostRoutes(300, false)
	v6 := hostRoutes(150, true)
	mpReach, err := bgp.NewPathAttributeMpReachNLRI(bgp.RF_IPv6_UC, toGobgp(t, v6), netip.MustParseAddr("2001:db8::20"), netip.MustParseAddr("fe80::20"))
	if err != nil {
		t.Fatal(err)
	}
	mpUnreach, err := bgp.NewPathAttributeMpUnreachNLRI(bgp.RF_IPv6_UC, toGobgp(t, v6[:20]))
	if err != nil {
		t.Fatal(err)
	}
	comms := bgp.NewPathAttributeCommunities(make([]uint32, 100)) // extended length
	tests := []struct {
		name    string
		msg     *bgp.BGPMessage
		addPath []Family
		want    UpdateInfo
	}{
		{"IPv4", bgp.NewBGPUpdateMessage(toGobgp(t, v4[:10]), []bgp.PathAttributeInterface{origin, aspath, nh, comms}, toGobgp(t, v4[10:])),
			nil, UpdateInfo{Withdrawn: 10, Reach: 290, Attributes: 4}},
		{"IPv4 add-path", bgp.NewBGPUpdateMessage(toGobgp(t, v4[:10]), []bgp.PathAttributeInterface{origin, aspath, nh}, toGobgp(t, v4[10:])),
			[]Family{IPv4Unicast}, UpdateInfo{Withdrawn: 10, Reach: 290, Attributes: 3}},
		{"IPv6", bgp.NewBGPUpdateMessage(nil, []bgp.PathAttributeInterface{mpReach, origin, aspath}, nil),
			nil, UpdateInfo{Reach: 150, Attributes: 3}},
		{"IPv6 add-path, both MP attributes", bgp.NewBGPUpdateMessage(nil, []bgp.PathAttributeInterface{mpReach, mpUnreach, origin, aspath}, nil),
			[]Family{IPv6Unicast}, UpdateInfo{Reach: 150, Withdrawn: 20, Attributes: 4}},
		{"IPv6 withdrawal", bgp.NewBGPUpdateMessage(nil, []bgp.PathAttributeInterface{mpUnreach}, nil),
			nil, UpdateInfo{Withdrawn: 20, Attributes: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := tt.msg.Serialize(gobgpOptions(bgp.BGP_ADD_PATH_SEND, false, tt.addPath...))
			if err != nil {
				t.Fatal(err)
			}
			_, body, rest, err := Split(b)
			if err != nil || len(rest) != 0 {
				t.Fatalf("Split: %v", err)
			}
			got, err := DecodeUpdate(body, tt.addPath)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestOracleNotification(t *testing.T) {
	ours := Shutdown("maintenance window")
	n := parseGobgp(t, ours.AppendTo(nil), nil).Body.(*bgp.BGPNotification)
	if n.ErrorCode != ErrCodeCease || n.ErrorSubcode != CeaseAdministrativeShutdown || string(n.Data) != string(ours.Data) {
		t.Errorf("GoBGP read %+v", n)
	}
	b, err := bgp.NewBGPNotificationMessage(bgp.BGP_ERROR_OPEN_MESSAGE_ERROR, bgp.BGP_ERROR_SUB_BAD_PEER_AS, []byte{0xfd, 0xe9}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	typ, body, _, err := Split(b)
	if err != nil || typ != TypeNotification {
		t.Fatalf("Split: %v %v", typ, err)
	}
	got, err := DecodeNotification(body)
	if err != nil || got.String() != "OPEN message error: bad peer AS (data fd e9)" {
		t.Errorf("GoBGP's read as %v, %v", got, err)
	}
}

func TestOracleKeepaliveRouteRefresh(t *testing.T) {
	if m := parseGobgp(t, AppendKeepalive(nil), nil); m.Header.Type != bgp.BGP_MSG_KEEPALIVE {
		t.Errorf("keepalive read as %d", m.Header.Type)
	}
	rr := RouteRefresh{Family: IPv6Unicast}
	if m := parseGobgp(t, rr.AppendTo(nil), nil).Body.(*bgp.BGPRouteRefresh); m.AFI != AFIIPv6 || m.SAFI != SAFIUnicast {
		t.Errorf("route refresh read as %+v", m)
	}
	b, err := bgp.NewBGPRouteRefreshMessage(AFIIPv4, 0, SAFIUnicast).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	typ, body, _, err := Split(b)
	if err != nil || typ != TypeRouteRefresh {
		t.Fatalf("Split: %v %v", typ, err)
	}
	if got, err := DecodeRouteRefresh(body); err != nil || got != (RouteRefresh{Family: IPv4Unicast}) {
		t.Errorf("GoBGP's read as %+v, %v", got, err)
	}
	b, err = bgp.NewBGPKeepAliveMessage().Serialize()
	if err != nil {
		t.Fatal(err)
	}
	if typ, _, _, err := Split(b); err != nil || typ != TypeKeepalive {
		t.Errorf("GoBGP's keepalive: %v %v", typ, err)
	}
}
