package elect

import (
	"testing"

	"github.com/metal-ccm/metal-ccm/pkg/l2/member"
)

// TestWitnessMajority: with two agents expected, the one alive answers only
// while it holds the witness's vote; an observer believes a live member's
// claim; with three expected the witness counts for nothing.
func TestWitnessMajority(t *testing.T) {
	a, b := l2Nodes[0], l2Nodes[1]
	claiming := a
	claiming.Fitness = member.Fitness{Forwards: true, AnyAddress: true, Witness: true}
	two := expectedOf(l2Nodes[:2])
	for _, tc := range []struct {
		name     string
		view     View
		majority bool
	}{
		{"both alive, no witness", View{Alive: []member.Member{a, b}, Expected: two, Self: a.Addresses}, true},
		{"alone, no witness", View{Alive: []member.Member{a}, Expected: two, Self: a.Addresses}, false},
		{"alone, holding the witness", View{Alive: []member.Member{a}, Expected: two, Self: a.Addresses, Witness: true}, true},
		{"alone, its gossip says it holds, its Lease not", View{Alive: []member.Member{claiming}, Expected: two, Self: a.Addresses}, false},
		{"the witness, but the live one is not self", View{Alive: []member.Member{b}, Expected: two, Self: a.Addresses, Witness: true}, false},
		{"three expected: the witness is no vote", View{Alive: []member.Member{a}, Expected: expectedOf(l2Nodes), Self: a.Addresses, Witness: true}, false},
		{"observer, the live member claims the witness", View{Alive: []member.Member{claiming}, Expected: two}, true},
		{"observer, no claim", View{Alive: []member.Member{a}, Expected: two}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.view.Candidates = l2Candidates(2)
			c := Choose(tc.view)
			if c.Quorum != tc.majority {
				t.Fatalf("majority %t, want %t", c.Quorum, tc.majority)
			}
			if tc.view.Self != nil && tc.majority != (len(c.Mine) > 0) {
				t.Fatalf("answers for %v with majority %t", c.Mine, c.Quorum)
			}
		})
	}
}

// TestWantsWitness: only an expected member of exactly two, whose node can
// carry addresses, takes the witness.
func TestWantsWitness(t *testing.T) {
	a, b := l2Nodes[0], l2Nodes[1]
	fit := member.Fitness{Forwards: true, AnyAddress: true}
	a.Fitness, b.Fitness = fit, fit
	unfit := a
	unfit.Fitness = member.Fitness{Forwards: true} // no interface on a segment
	two := expectedOf(l2Nodes[:2])
	for _, tc := range []struct {
		name string
		view View
		want bool
	}{
		{"one of two, fit", View{Alive: []member.Member{a, b}, Expected: two, Self: a.Addresses}, true},
		{"one of two, alone", View{Alive: []member.Member{a}, Expected: two, Self: a.Addresses}, true},
		{"one of two, no segment", View{Alive: []member.Member{unfit, b}, Expected: two, Self: a.Addresses}, false},
		{"not expected (out of l2.nodeSelector)", View{Alive: []member.Member{a, b, l2Nodes[2]}, Expected: two, Self: l2Nodes[2].Addresses}, false},
		{"three expected", View{Alive: []member.Member{a, b}, Expected: expectedOf(l2Nodes), Self: a.Addresses}, false},
		{"observer", View{Alive: []member.Member{a, b}, Expected: two}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := WantsWitness(tc.view); got != tc.want {
				t.Fatalf("WantsWitness %t, want %t", got, tc.want)
			}
		})
	}
}
