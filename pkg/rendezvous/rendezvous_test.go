package rendezvous

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
)

// nodes are n addresses in 198.18.0.0/15, 250 to a /24 from 198.18.base.0.
func nodes(n int, base byte) []netip.Addr {
	var hops []netip.Addr
	for i := range n {
		hops = append(hops, netip.AddrFrom4([4]byte{198, 18, base + byte(i/250), byte(i % 250)}))
	}
	return hops
}

func TestPickIsStable(t *testing.T) {
	const limit = 255
	hops := nodes(300, 10)
	p := netip.MustParsePrefix("198.18.100.1/32")
	got := Pick(p, hops, limit)
	if len(got) != limit {
		t.Fatalf("%d next hops, want %d", len(got), limit)
	}
	// Stable, and one node more or less moves at most one path.
	if again := Pick(p, slices.Clone(hops), limit); fmt.Sprint(again) != fmt.Sprint(got) {
		t.Error("choice not stable")
	}
	fewer := Pick(p, hops[1:], limit)
	moved := 0
	for _, h := range fewer {
		if !slices.Contains(got, h) {
			moved++
		}
	}
	if moved > 1 {
		t.Errorf("removing one node moved %d paths", moved)
	}
	other := Pick(netip.MustParsePrefix("198.18.100.2/32"), hops, limit)
	if fmt.Sprint(other) == fmt.Sprint(got) {
		t.Error("every prefix chose the same nodes")
	}
	if small := Pick(p, hops[:3], limit); len(small) != 3 {
		t.Errorf("a short list was cut: %v", small)
	}
	if none := Pick(p, hops, 0); len(none) != 0 {
		t.Errorf("limit 0 chose %v", none)
	}
}

// TestPickSpread checks that the nodes chosen for an address are spread over
// the subnet, not a run of neighbours: with 64 of 1,000 nodes chosen at
// random, about 6% of the chosen have their next address chosen too.
func TestPickSpread(t *testing.T) {
	hops := nodes(1000, 64)
	neighbours, chosen := 0, 0
	used := map[netip.Addr]bool{}
	for i := range 200 {
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 18, byte(100 + i/250), byte(i % 250)}), 32)
		got := Pick(p, hops, 64)
		if len(got) != 64 || !slices.IsSortedFunc(got, netip.Addr.Compare) {
			t.Fatalf("%s: %d next hops, sorted %v", p, len(got), slices.IsSortedFunc(got, netip.Addr.Compare))
		}
		for _, h := range got {
			used[h] = true
			if _, found := slices.BinarySearchFunc(got, h.Next(), netip.Addr.Compare); found {
				neighbours++
			}
		}
		chosen += len(got)
	}
	if share := float64(neighbours) / float64(chosen); share > 0.15 {
		t.Errorf("%.0f%% of the chosen next hops have their neighbour chosen too: runs of nodes, not a spread", share*100)
	}
	if len(used) < 950 {
		t.Errorf("200 addresses x 64 next hops used only %d of 1000 nodes", len(used))
	}
}

func TestOwner(t *testing.T) {
	if _, ok := Owner(netip.MustParsePrefix("198.18.100.1/32"), nil); ok {
		t.Error("an owner among no nodes")
	}
	hops := append(nodes(20, 10), netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::2"))
	owners := map[netip.Addr]int{}
	for i := range 200 {
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 18, 100, byte(i)}), 32)
		if i%2 == 1 {
			p = netip.PrefixFrom(netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 15: byte(i)}), 128)
		}
		owner, ok := Owner(p, hops)
		if !ok || owner != Pick(p, hops, 1)[0] {
			t.Fatalf("%s: owner %s, Pick(1) %v", p, owner, Pick(p, hops, 1))
		}
		owners[owner]++
		// The order of the nodes does not matter.
		reversed := slices.Clone(hops)
		slices.Reverse(reversed)
		if again, _ := Owner(p, reversed); again != owner {
			t.Fatalf("%s: owner %s, %s with the nodes reversed", p, owner, again)
		}
		// Removing any node but the owner keeps the owner; removing the
		// owner moves the address to the next choice.
		for j, h := range hops {
			without := slices.Delete(slices.Clone(hops), j, j+1)
			got, _ := Owner(p, without)
			if h != owner && got != owner {
				t.Fatalf("%s: removing %s moved the owner %s to %s", p, h, owner, got)
			}
			if h == owner && got != Pick(p, hops, 2)[0] && got != Pick(p, hops, 2)[1] {
				t.Fatalf("%s: removing the owner %s chose %s, not the second choice of %v", p, owner, got, Pick(p, hops, 2))
			}
		}
	}
	if len(owners) < 15 {
		t.Errorf("200 addresses owned by only %d of %d nodes", len(owners), len(hops))
	}
	single := []netip.Addr{netip.MustParseAddr("198.18.10.1")}
	if owner, ok := Owner(netip.MustParsePrefix("198.18.100.1/32"), single); !ok || owner != single[0] {
		t.Errorf("the only node is not the owner: %s %v", owner, ok)
	}
}

// TestPickIsTheBestScores checks the one-pass selection against its
// definition: sort every hop by score, keep the first limit, sort by
// address.
func TestPickIsTheBestScores(t *testing.T) {
	var hops []netip.Addr
	a := netip.MustParseAddr("198.18.20.0")
	for range 300 {
		a = a.Next()
		hops = append(hops, a)
	}
	for _, limit := range []int{1, 2, 16, 64, 299} {
		for k := range 50 {
			key := netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 18, 100, byte(k)}), 32)
			seed := seedOf(key)
			all := make([]scored, len(hops))
			for i, h := range hops {
				all[i] = scored{score(seed, h), h}
			}
			slices.SortFunc(all, scored.compare)
			want := make([]netip.Addr, limit)
			for i := range want {
				want[i] = all[i].hop
			}
			slices.SortFunc(want, netip.Addr.Compare)
			if got := Pick(key, hops, limit); !slices.Equal(got, want) {
				t.Fatalf("Pick(%s, 300 hops, %d) = %v, want %v", key, limit, got, want)
			}
		}
	}
}
