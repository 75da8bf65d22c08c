package member

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"testing"
)

var (
	macA = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x0a}
	macB = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x0b}
)

// TestMetaVersion3 carries the MACs and the conflicts, and reads the
// metadata of the release before them (version 2) as having none.
func TestMetaVersion3(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    Fitness
	}{
		{"none", Fitness{Forwards: true}},
		{"MACs only", Fitness{Forwards: true, MACs: []net.HardwareAddr{macA, macB}}},
		{"conflicts", Fitness{Forwards: true, MACs: []net.HardwareAddr{macA}, Conflicts: []Conflict{
			{Addr: netip.MustParseAddr("198.18.0.200"), MAC: macB}, {Addr: netip.MustParseAddr("2001:db8::200")}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := meta{role: roleAgent, addresses: []netip.Addr{netip.MustParseAddr("198.18.0.12")}, fitness: tc.f}
			b, err := m.encode()
			if err != nil {
				t.Fatal(err)
			}
			got, err := decodeMeta(b)
			if err != nil || !got.fitness.Equal(tc.f) {
				t.Errorf("decoded %v, %v; want %v", got.fitness, err, tc.f)
			}
		})
	}
	t.Run("version 2", func(t *testing.T) {
		// Version 2 as that release wrote it: one address, forwards, one prefix.
		got, err := decodeMeta([]byte{2, byte(roleAgent), 1, 4, 198, 18, 0, 13, flagForwards, 1, 4, 198, 18, 0, 0, 24})
		want := Fitness{Forwards: true, Reach: []netip.Prefix{netip.MustParsePrefix("198.18.0.0/24")}}
		if err != nil || !got.fitness.Equal(want) {
			t.Errorf("version 2 decoded as %v, %v; want %v", got.fitness, err, want)
		}
	})
	t.Run("read by version 2", func(t *testing.T) {
		// A reader of version 2 stops after the fitness: what version 3
		// appends does not change what it reads.
		f := Fitness{Forwards: true, Reach: []netip.Prefix{netip.MustParsePrefix("198.18.0.0/24")}}
		b, err := meta{role: roleAgent, fitness: Fitness{Forwards: f.Forwards, Reach: f.Reach, MACs: []net.HardwareAddr{macA},
			Conflicts: []Conflict{{Addr: netip.MustParseAddr("198.18.0.200"), MAC: macB}}}}.encode()
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := decodeFitness(b[3:])
		if err != nil || !got.Equal(f) {
			t.Errorf("a version 2 reader gets %v, %v; want %v", got, err, f)
		}
	})
}

func TestMetaVersion3Limits(t *testing.T) {
	var many []Conflict
	for i := range MaxConflicts + 1 {
		many = append(many, Conflict{Addr: netip.AddrFrom4([4]byte{198, 18, 0, byte(i)})})
	}
	for _, tc := range []struct {
		name string
		f    Fitness
	}{
		{"too many conflicts", Fitness{Conflicts: many}},
		{"too many MACs", Fitness{MACs: make([]net.HardwareAddr, MaxMACs+1)}},
		{"short MAC", Fitness{MACs: []net.HardwareAddr{{1, 2}}}},
		{"invalid address", Fitness{Conflicts: []Conflict{{}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := (meta{fitness: tc.f}).encode(); err == nil {
				t.Errorf("%v encoded", tc.f)
			}
		})
	}
	// The most of everything IPv6 still fits beside a few addresses.
	full := Fitness{Forwards: true}
	for i := range MaxMACs {
		full.MACs = append(full.MACs, net.HardwareAddr{2, 0, 0, 0, 0, byte(i)})
	}
	for i := range MaxConflicts {
		full.Conflicts = append(full.Conflicts, Conflict{Addr: netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 15: byte(i)}), MAC: macA})
	}
	if _, err := (meta{addresses: []netip.Addr{netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("2001:db8::1")}, fitness: full}).encode(); err != nil {
		t.Errorf("the most MACs and conflicts: %v", err)
	}
	// Many prefixes: the conflicts give way first, then the MACs, and the
	// fitness gets through.
	crowded := full
	for i := range 24 {
		crowded.Reach = append(crowded.Reach, netip.PrefixFrom(netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 1, byte(i)}), 64))
	}
	b, err := (meta{fitness: crowded}).encode()
	if err != nil {
		t.Fatalf("a crowded metadata: %v", err)
	}
	got, err := decodeMeta(b)
	if err != nil || len(b) > 512 || len(got.fitness.Reach) != 24 || len(got.fitness.Conflicts) >= MaxConflicts {
		t.Errorf("crowded: %d bytes, %v, %v; want every prefix, fewer conflicts, at most 512 bytes", len(b), got.fitness, err)
	}
	for i, b := range [][]byte{
		{3, 0, 0, 0, 0},                         // MACs and conflicts missing
		{3, 0, 0, 0, 0, 1, 2, 0},                // a MAC cut short
		{3, 0, 0, 0, 0, 0},                      // conflicts missing
		{3, 0, 0, 0, 0, 0, 1, 4, 198, 18},       // an address cut short
		{3, 0, 0, 0, 0, 0, 1, 4, 198, 18, 0, 1}, // MAC length missing
		{3, 0, 0, 0, 0, 0, 1, 4, 198, 18, 0, 1, 5, 1, 2, 3, 4, 5},
	} {
		t.Run(fmt.Sprint("malformed ", i), func(t *testing.T) {
			if m, err := decodeMeta(b); !errors.Is(err, errMeta) {
				t.Errorf("%v decoded as %v, %v", b, m, err)
			}
		})
	}
}
