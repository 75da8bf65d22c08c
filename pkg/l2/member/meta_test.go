package member

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"testing"
)

func TestMetaRoundTrip(t *testing.T) {
	for _, m := range []meta{
		{role: roleAgent},
		{role: roleObserver, addresses: []netip.Addr{netip.MustParseAddr("198.18.0.10")}},
		{role: roleAgent, addresses: []netip.Addr{netip.MustParseAddr("198.18.0.11"), netip.MustParseAddr("2001:db8::11")}},
		{role: roleAgent, addresses: []netip.Addr{netip.MustParseAddr("198.18.0.12")}, fitness: Fitness{Forwards: true,
			Reach: []netip.Prefix{netip.MustParsePrefix("198.18.0.0/24"), netip.MustParsePrefix("2001:db8::/64")}}},
		{role: roleAgent, fitness: Fitness{AnyAddress: true}},
		{role: roleAgent, fitness: Fitness{Forwards: true, Witness: true}},
		{role: roleAgent, fitness: Fitness{Forwards: true, Holds: []netip.Addr{netip.MustParseAddr("198.18.100.1"), netip.MustParseAddr("198.18.100.7"),
			netip.MustParseAddr("2001:db8:100::1")}}},
	} {
		b, err := m.encode()
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeMeta(b)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(m) {
			t.Errorf("%v: decoded %v, %v", m, got, err)
		}
		// A later version appends fields; this one reads what it knows.
		b[0] = metaVersion + 1
		if got, err := decodeMeta(append(b, 7, 7, 7)); err != nil || fmt.Sprint(got) != fmt.Sprint(m) {
			t.Errorf("%v in a later version: decoded %v, %v", m, got, err)
		}
	}
	// An IPv4-mapped address is carried as IPv4.
	b, _ := meta{addresses: []netip.Addr{netip.MustParseAddr("::ffff:198.18.0.12")}}.encode()
	if got, _ := decodeMeta(b); got.addresses[0] != netip.MustParseAddr("198.18.0.12") {
		t.Errorf("mapped address decoded as %v", got.addresses)
	}
}

// TestMetaVersion1: a member of the release before fitness (version 1,
// addresses only) is read as fit for every address.
func TestMetaVersion1(t *testing.T) {
	got, err := decodeMeta([]byte{1, byte(roleAgent), 1, 4, 198, 18, 0, 13})
	if err != nil || !got.fitness.Equal(Fit) || fmt.Sprint(got.addresses) != "[198.18.0.13]" {
		t.Errorf("version 1 metadata decoded as %v, %v; want fit for every address", got, err)
	}
}

// TestMetaHoldsGiveWay: over memberlist's cap, the addresses held are cut
// from the end first, and the fitness, MACs and conflicts still go through.
func TestMetaHoldsGiveWay(t *testing.T) {
	var holds []netip.Addr
	for i := range 200 {
		holds = append(holds, netip.AddrFrom4([4]byte{198, 18, 100, byte(i)}))
	}
	f := Fitness{Forwards: true, Reach: []netip.Prefix{netip.MustParsePrefix("198.18.100.0/24")}, Holds: holds,
		Conflicts: []Conflict{{Addr: netip.MustParseAddr("198.18.100.250")}}}
	b, err := meta{role: roleAgent, addresses: []netip.Addr{netip.MustParseAddr("198.18.0.11")}, fitness: f}.encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeMeta(b)
	if err != nil {
		t.Fatal(err)
	}
	n := len(got.fitness.Holds)
	if n == 0 || n == len(holds) || len(b) > 512 {
		t.Fatalf("%d of %d held addresses in %d bytes; want some cut to fit 512", n, len(holds), len(b))
	}
	if !slices.Equal(got.fitness.Holds, holds[:n]) || !got.fitness.Forwards || len(got.fitness.Conflicts) != 1 {
		t.Errorf("decoded %v; want the fitness, the conflict and the first %d held addresses", got.fitness, n)
	}
	if !got.fitness.Held(holds[0]) || got.fitness.Held(holds[n]) {
		t.Errorf("Held: %v first, %v past the cut", got.fitness.Held(holds[0]), got.fitness.Held(holds[n]))
	}
}

func TestMetaLimits(t *testing.T) {
	var many []netip.Addr
	for i := range 40 {
		many = append(many, netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 15: byte(i)}))
	}
	if _, err := (meta{addresses: many}).encode(); err == nil {
		t.Error("40 IPv6 addresses fit in 512 bytes")
	}
	if _, err := (meta{addresses: []netip.Addr{{}}}).encode(); err == nil {
		t.Error("an invalid address encoded")
	}
	for _, b := range [][]byte{nil, {1, 0}, {0, 0, 0}, {1, 0, 1}, {1, 0, 1, 5, 1, 2, 3, 4, 5}, {1, 0, 1, 4, 198, 18}, {1, 0, 2, 4, 198, 18, 0, 1},
		// Version 2: fitness missing, a prefix cut short, more bits than the address has.
		{2, 0, 0}, {2, 0, 0, 1}, {2, 0, 0, 1, 1, 4, 198, 18, 0, 0}, {2, 0, 0, 1, 1, 4, 198, 18, 0, 0, 33}} {
		if m, err := decodeMeta(b); !errors.Is(err, errMeta) {
			t.Errorf("%v decoded as %v, %v", b, m, err)
		}
	}
}
