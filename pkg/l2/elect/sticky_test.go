package elect

import (
	"maps"
	"net/netip"
	"slices"
	"testing"

	"github.com/metal-ccm/metal-ccm/pkg/l2/member"
	"github.com/metal-ccm/metal-ccm/pkg/rendezvous"
)

// TestChooseSticky: a fit candidate that says it holds an address keeps
// it over the first by hashing; two holders are settled by hashing among
// them; a holder that cannot carry the address, or is no candidate for
// it, holds nothing; the other addresses are left as they were.
func TestChooseSticky(t *testing.T) {
	cands := l2Candidates(4)
	all := expectedOf(l2Nodes)
	fitAll := func() []member.Member {
		out := slices.Clone(l2Nodes)
		for i := range out {
			out[i].Fitness = member.Fitness{Forwards: true, AnyAddress: true}
		}
		return out
	}
	base := Choose(View{Candidates: cands, Alive: fitAll(), Expected: all}).Owners
	x := netip.MustParsePrefix("198.18.6.3/32")
	index := func(a netip.Addr) int {
		return slices.IndexFunc(l2Nodes, func(m member.Member) bool { return slices.Contains(m.Addresses, a) })
	}
	w := index(base[x]) // the first by hashing
	o1, o2 := (w+1)%3, (w+2)%3
	holding := func(hold ...int) []member.Member {
		out := fitAll()
		for _, i := range hold {
			out[i].Fitness.Holds = []netip.Addr{x.Addr()}
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		alive []member.Member
		cands map[netip.Prefix][]netip.Addr
		want  netip.Addr
		// moved: other addresses may move (the holder cannot carry any).
		moved bool
	}{
		{"no holder: the first by hashing", holding(), cands, base[x], false},
		{"another node holds it: it keeps it", holding(o1), cands, l2Nodes[o1].Addresses[0], false},
		{"two hold it: hashing among them", holding(o1, o2), cands,
			first(x, l2Nodes[o1].Addresses[0], l2Nodes[o2].Addresses[0]), false},
		{"the holder cannot carry it", func() []member.Member {
			out := holding(o1)
			out[o1].Fitness.Forwards = false
			return out
		}(), cands, base[x], true},
		{"the holder is no candidate", holding(o1), func() map[netip.Prefix][]netip.Addr {
			out := maps.Clone(cands)
			out[x] = []netip.Addr{l2Nodes[w].Addresses[0], l2Nodes[o2].Addresses[0]}
			return out
		}(), first(x, l2Nodes[w].Addresses[0], l2Nodes[o2].Addresses[0]), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := answered(tc.cands, tc.alive, all)
			if want := l2Nodes[index(tc.want)].Name; !slices.Equal(got[x.Addr()], []string{want}) {
				t.Errorf("%s answered by %v, want %s", x.Addr(), got[x.Addr()], want)
			}
			c := Choose(View{Candidates: tc.cands, Alive: tc.alive, Expected: all})
			if c.Owners[x] != tc.want {
				t.Errorf("observer: %s owned by %s, want %s", x.Addr(), c.Owners[x], tc.want)
			}
			for p, o := range base {
				if p != x && !tc.moved && c.Owners[p] != o {
					t.Errorf("%s owned by %s, want %s as without holds", p.Addr(), c.Owners[p], o)
				}
			}
		})
	}
}

// first is the first of hops for p by rendezvous hashing.
func first(p netip.Prefix, hops ...netip.Addr) netip.Addr {
	o, _ := rendezvous.Owner(p, hops)
	return o
}
