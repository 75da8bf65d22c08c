package bgp

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/limits"
	"github.com/metal-ccm/metal-ccm/pkg/bgp/wire"
)

var (
	routerID = netip.MustParseAddr("198.18.10.2")
	peer4    = netip.MustParseAddr("198.18.10.1")
	peer6    = netip.MustParseAddr("2001:db8:10::1")
	lladdr   = netip.MustParseAddr("fe80::1")
)

func TestNewValidates(t *testing.T) {
	ok := Peer{Address: peer4, ASN: 64500}
	tests := []struct {
		name string
		cfg  Config
		want string // "" = valid; else a part of the error
	}{
		{"minimal", Config{ASN: 64512, RouterID: routerID}, ""},
		{"peers of both families", Config{ASN: 64512, RouterID: routerID, Peers: []Peer{ok, {
			Address: peer6, ASN: 64500, Port: 1179, HoldTime: 3 * time.Second, Password: "pw",
			GracefulRestart: true, RestartTime: 4095 * time.Second, LocalAddress: netip.MustParseAddr("2001:db8:10::2"),
		}}}, ""},
		{"no asn", Config{RouterID: routerID}, "asn must not be 0"},
		{"no router id", Config{ASN: 1}, "routerID"},
		{"ipv6 router id", Config{ASN: 1, RouterID: peer6}, "routerID"},
		{"zero router id", Config{ASN: 1, RouterID: netip.IPv4Unspecified()}, "routerID"},
		{"peer without address", Config{ASN: 1, RouterID: routerID, Peers: []Peer{{ASN: 2}}}, "peers[0]: address"},
		{"peer without asn", Config{ASN: 1, RouterID: routerID, Peers: []Peer{{Address: peer4}}}, "peers[0]: asn"},
		{"duplicate peer", Config{ASN: 1, RouterID: routerID, Peers: []Peer{ok, ok}}, "peers[1]: duplicate address"},
		{"peer on an interface", Config{ASN: 1, RouterID: routerID, Peers: []Peer{ok, {Interface: "eth1", ASN: 2, NextHopSelf: true}}}, ""},
		{"peer on an interface with its link-local address", Config{ASN: 1, RouterID: routerID, Peers: []Peer{{Interface: "eth1", Address: lladdr, ASN: 2}}}, ""},
		{"duplicate interface", Config{ASN: 1, RouterID: routerID, Peers: []Peer{{Interface: "eth1", ASN: 2}, {Interface: "eth1", ASN: 3}}}, "peers[1]: duplicate interface eth1"},
		{"interface with a global address", Config{ASN: 1, RouterID: routerID, Peers: []Peer{{Interface: "eth1", Address: peer6, ASN: 2}}}, "link-local"},
		{"interface with an IPv4 address", Config{ASN: 1, RouterID: routerID, Peers: []Peer{{Interface: "eth1", Address: peer4, ASN: 2}}}, "link-local"},
		{"interface with a zoned address", Config{ASN: 1, RouterID: routerID, Peers: []Peer{{Interface: "eth1", Address: lladdr.WithZone("eth1"), ASN: 2}}}, "zone"},
		{"interface with local address", Config{ASN: 1, RouterID: routerID, Peers: []Peer{{Interface: "eth1", LocalAddress: peer6, ASN: 2}}}, "localAddress"},
		{"interface with multihop", Config{ASN: 1, RouterID: routerID, Peers: []Peer{{Interface: "eth1", MultihopTTL: 2, ASN: 2}}}, "multihopTTL"},
		{"interface with bfd", Config{ASN: 1, RouterID: routerID, Peers: []Peer{{Interface: "eth1", BFD: &BFD{}, ASN: 2}}}, ""},
		{"hold time too short", Config{ASN: 1, RouterID: routerID, Peers: []Peer{{Address: peer4, ASN: 2, HoldTime: time.Second}}}, "holdTime"},
		{"negative restart time", Config{ASN: 1, RouterID: routerID, Peers: []Peer{{Address: peer4, ASN: 2, RestartTime: -time.Second}}}, "restartTime"},
		{"restart time below a second", Config{ASN: 1, RouterID: routerID, Peers: []Peer{{Address: peer4, ASN: 2, RestartTime: time.Millisecond}}}, "restartTime"},
		{"restart time too long", Config{ASN: 1, RouterID: routerID, Peers: []Peer{{Address: peer4, ASN: 2, RestartTime: time.Hour * 2}}}, "restartTime"},
		{"local address of other family", Config{ASN: 1, RouterID: routerID, Peers: []Peer{{Address: peer4, ASN: 2, LocalAddress: peer6}}}, "localAddress"},
		{"mapped address", Config{ASN: 1, RouterID: routerID, Peers: []Peer{{Address: netip.MustParseAddr("::ffff:198.18.10.1"), ASN: 2}}}, "IPv4-mapped"},
		{"bfd with defaults", Config{ASN: 1, RouterID: routerID, Peers: []Peer{{Address: peer4, ASN: 2, BFD: &BFD{}}}}, ""},
		{"bfd interval too short", Config{ASN: 1, RouterID: routerID, Peers: []Peer{{Address: peer4, ASN: 2, BFD: &BFD{ReceiveInterval: 10 * time.Millisecond}}}}, "peers[0]: bfd.receiveInterval"},
		{"bfd interval too long", Config{ASN: 1, RouterID: routerID, Peers: []Peer{{Address: peer4, ASN: 2, BFD: &BFD{TransmitInterval: time.Minute}}}}, "bfd.transmitInterval"},
		{"bfd multiplier 1", Config{ASN: 1, RouterID: routerID, Peers: []Peer{{Address: peer4, ASN: 2, BFD: &BFD{Multiplier: 1}}}}, "bfd.multiplier"},
		{"zoned address", Config{ASN: 1, RouterID: routerID, Peers: []Peer{{Address: netip.MustParseAddr("fe80::1%eth0"), ASN: 2}}}, "zone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(tt.cfg)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tt.want != "" && err == nil:
				t.Fatalf("New accepted an invalid config, want error with %q", tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Fatalf("error %q lacks %q", err, tt.want)
			case err != nil && strings.Contains(err.Error(), "pw"):
				t.Fatalf("error shows the password: %v", err)
			}
			if s == nil {
				return
			}
			for i, p := range s.cfg.Peers {
				if p.Port == 0 || p.HoldTime == 0 || p.RestartTime == 0 {
					t.Errorf("peer %d has no defaults: %+v", i, p)
				}
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	s, err := New(Config{ASN: 1, RouterID: routerID, Peers: []Peer{{Address: peer4, ASN: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	p := s.cfg.Peers[0]
	if p.Port != 179 || p.HoldTime != 90*time.Second || p.RestartTime != 120*time.Second {
		t.Errorf("defaults = %+v", p)
	}
	c := newPeerRun(s, 0, logr.Discard(), p.Address).config(p.Address)
	if c.HoldTime != 90*time.Second || c.Port != 179 || c.GracefulRestart || !c.AddPathSend || len(c.Families) != 1 || c.Families[0] != wire.IPv4Unicast {
		t.Errorf("session config = %+v", c)
	}
}

func TestBFDDefaults(t *testing.T) {
	s, err := New(Config{ASN: 1, RouterID: routerID, Peers: []Peer{{Address: peer4, ASN: 2, BFD: &BFD{ReceiveInterval: time.Second}}, {Address: peer6, ASN: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	want := BFD{ReceiveInterval: time.Second, TransmitInterval: limits.DefaultBFDInterval, Multiplier: limits.DefaultBFDMultiplier}
	if b := s.cfg.Peers[0].BFD; b == nil || *b != want {
		t.Errorf("BFD with defaults = %+v, want %+v", b, want)
	}
	if b := s.cfg.Peers[1].BFD; b != nil {
		t.Errorf("a peer without BFD got %+v", b)
	}
	for _, st := range s.PeerStates() {
		if st.BFD != "" {
			t.Errorf("%s: BFD state %q before Start, want none", st.Address, st.BFD)
		}
	}
}

// TestTTLSecurity: GTSM takes packets from one hop away, or from as many
// as the multihop TTL allows, and is off unless asked for.
func TestTTLSecurity(t *testing.T) {
	for _, tc := range []struct {
		peer Peer
		want uint32 // 0: off
	}{
		{Peer{Address: peer4, ASN: 2}, 0},
		{Peer{Address: peer4, ASN: 2, TTLSecurity: true}, 255},
		{Peer{Address: peer4, ASN: 2, TTLSecurity: true, MultihopTTL: 3}, 253},
	} {
		got := uint32(0)
		if tc.peer.TTLSecurity {
			got = ttlMin(tc.peer.MultihopTTL)
		}
		if got != tc.want {
			t.Errorf("%+v: least TTL taken %d, want %d (0: off)", tc.peer, got, tc.want)
		}
	}
}

// TestSetPathsBeforeStart records paths without a running server and checks
// the argument checks.
func TestSetPathsBeforeStart(t *testing.T) {
	ctx := context.Background()
	s, err := New(Config{ASN: 1, RouterID: routerID})
	if err != nil {
		t.Fatal(err)
	}
	vip := netip.MustParsePrefix("198.18.30.1/32")
	a, b := netip.MustParseAddr("198.18.10.12"), netip.MustParseAddr("198.18.10.11")
	if err := s.SetPaths(ctx, vip, []netip.Addr{a, b, a}); err != nil {
		t.Fatal(err)
	}
	got := s.Prefixes()
	if len(got) != 1 || len(got[vip]) != 2 || got[vip][0] != b || got[vip][1] != a {
		t.Errorf("Prefixes = %v", got)
	}
	got[vip][0] = a // a copy
	if s.Prefixes()[vip][0] != b {
		t.Error("Prefixes returned the speaker's own slice")
	}
	if err := s.SetPaths(ctx, vip, nil); err != nil {
		t.Fatal(err)
	}
	if got := s.Prefixes(); len(got) != 0 {
		t.Errorf("after withdrawal Prefixes = %v", got)
	}
	for _, bad := range []struct {
		prefix netip.Prefix
		hops   []netip.Addr
	}{
		{netip.MustParsePrefix("198.18.30.1/24"), []netip.Addr{a}}, // not canonical
		{netip.Prefix{}, []netip.Addr{a}},
		{vip, []netip.Addr{peer6}},
		{vip, []netip.Addr{{}}},
		{netip.MustParsePrefix("2001:db8:30::1/128"), []netip.Addr{a}},
	} {
		if err := s.SetPaths(ctx, bad.prefix, bad.hops); err == nil {
			t.Errorf("SetPaths(%v, %v) accepted", bad.prefix, bad.hops)
		}
	}
	if got := s.PeerStates(); len(got) != 0 {
		t.Errorf("PeerStates = %v", got)
	}
	s.Stop()
	if err := s.Start(ctx); err == nil {
		t.Error("Start after Stop succeeded")
	}
}

func TestPathID(t *testing.T) {
	a := netip.MustParseAddr("198.18.10.11")
	if got := pathID(a, nil); got != 198<<24|18<<16|10<<8|11 {
		t.Errorf("IPv4 path id = %d", got)
	}
	v6 := netip.MustParseAddr("2001:db8:10::11")
	id := pathID(v6, nil)
	if id == 0 || pathID(v6, nil) != id {
		t.Errorf("IPv6 path id %d not stable or zero", id)
	}
	if got := pathID(v6, map[uint32]bool{id: true}); got == id || got == 0 {
		t.Errorf("collision not avoided: %d", got)
	}
}

func TestPeerStatesIdle(t *testing.T) {
	s, err := New(Config{ASN: 1, RouterID: routerID, Peers: []Peer{{Address: peer4, ASN: 2}, {Address: peer6, ASN: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	got := s.PeerStates()
	if len(got) != 2 || got[0].Address != peer4 || got[1].Address != peer6 || got[0].State != "idle" {
		t.Errorf("PeerStates = %v", got)
	}
}

func TestPeerCarries(t *testing.T) {
	p := Peer{Address: netip.MustParseAddr("198.18.10.1"), Deny: []netip.Prefix{netip.MustParsePrefix("198.19.0.0/16")}}
	for prefix, want := range map[string]bool{
		"198.18.100.1/32":   true,
		"198.19.3.0/24":     false, // a pod CIDR inside the denied cluster CIDR
		"198.19.0.0/16":     false,
		"198.18.0.0/15":     true,  // covers the denied range but is not inside it
		"2001:db8:100::/64": false, // another family
	} {
		if got := p.carries(netip.MustParsePrefix(prefix)); got != want {
			t.Errorf("carries(%s) = %v, want %v", prefix, got, want)
		}
	}
	// A link-local session carries both families.
	ll := Peer{Interface: "eth1"}
	for _, prefix := range []string{"198.18.100.1/32", "2001:db8:100::1/128"} {
		if !ll.carries(netip.MustParsePrefix(prefix)) {
			t.Errorf("peer on an interface: carries(%s) = false", prefix)
		}
	}
}

// TestLinkLocalPeerConfig: a peer on an interface is GoBGP's neighbour at
// the router's zoned link-local address with IPv4 and IPv6 unicast (GoBGP
// then offers the extended next hop capability for IPv4), and a peer with
// NextHopSelf sends unspecified next hops (GoBGP puts the session's own
// address in their place).
func TestLinkLocalPeerConfig(t *testing.T) {
	p, err := Peer{Interface: "eth1", ASN: 2, GracefulRestart: true, NextHopSelf: true}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{ASN: 1, RouterID: routerID, Peers: []Peer{p}})
	if err != nil {
		t.Fatal(err)
	}
	c := newPeerRun(s, 0, logr.Discard(), lladdr.WithZone("eth1")).config(lladdr.WithZone("eth1"))
	if c.Neighbor.String() != "fe80::1%eth1" {
		t.Errorf("neighbor address %s, want fe80::1%%eth1", c.Neighbor)
	}
	if len(c.Families) != 2 || c.Families[0] != wire.IPv4Unicast || c.Families[1] != wire.IPv6Unicast || !c.ExtendedNextHop || !c.GracefulRestart || !c.AddPathSend {
		t.Errorf("session config %+v: want IPv4 and IPv6 with extended next hops, graceful restart and ADD-PATH", c)
	}
}
