package elect

import (
	"net"
	"net/netip"
	"slices"
	"testing"

	"github.com/metal-ccm/metal-ccm/pkg/l2/member"
)

// TestChooseConflict: an address a bound member reports in use by a
// foreign host has no owner, whoever reports it (not only its owner); an
// unbound member's report counts for nothing; the others keep theirs.
func TestChooseConflict(t *testing.T) {
	cands := l2Candidates(4)
	all := expectedOf(l2Nodes)
	base := answered(cands, l2Nodes, all)
	v4, v6 := netip.MustParseAddr("198.18.6.2"), netip.MustParseAddr("2001:db8:6::3")
	foreign := net.HardwareAddr{0x02, 0xf0, 0, 0, 0, 1}
	reporting := func(i int, cs ...member.Conflict) []member.Member {
		out := slices.Clone(l2Nodes)
		out[i].Fitness.Conflicts = cs
		return out
	}
	rogue := member.Member{Name: "rogue", Addresses: []netip.Addr{netip.MustParseAddr("198.18.5.9")}, From: netip.MustParseAddr("198.18.5.9"),
		Fitness: member.Fitness{Conflicts: []member.Conflict{{Addr: v4, MAC: foreign}}}}
	for _, tc := range []struct {
		name  string
		alive []member.Member
		none  []netip.Addr // the addresses with no owner
	}{
		{"reported by a", reporting(0, member.Conflict{Addr: v4, MAC: foreign}), []netip.Addr{v4}},
		{"reported by c, both families", reporting(2, member.Conflict{Addr: v4, MAC: foreign}, member.Conflict{Addr: v6}), []netip.Addr{v4, v6}},
		{"reported by an unbound member", append(slices.Clone(l2Nodes), rogue), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := answered(cands, tc.alive, all)
			for p := range cands {
				a := p.Addr()
				switch {
				case slices.Contains(tc.none, a) && len(got[a]) != 0:
					t.Errorf("%s in conflict answered by %v", a, got[a])
				case !slices.Contains(tc.none, a) && !slices.Equal(got[a], base[a]):
					t.Errorf("%s answered by %v, want %v as without conflicts", a, got[a], base[a])
				}
			}
			c := Choose(View{Candidates: cands, Alive: tc.alive, Expected: all})
			for _, a := range tc.none {
				if _, ok := c.Owners[netip.PrefixFrom(a, a.BitLen())]; ok {
					t.Errorf("%s in conflict has an owner", a)
				}
				if _, ok := c.Conflicts[a]; !ok {
					t.Errorf("%s not among the conflicts %v", a, c.Conflicts)
				}
			}
			if len(c.Conflicts) != len(tc.none) {
				t.Errorf("conflicts %v, want %v", c.Conflicts, tc.none)
			}
		})
	}
}
