package elect

import (
	"context"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/metal-ccm/metal-ccm/pkg/l2/member"
	"github.com/metal-ccm/metal-ccm/pkg/rendezvous"
)

// settableMembers is a membership a test changes between rounds.
type settableMembers struct{ alive []member.Member }

func (s *settableMembers) Alive() []member.Member    { return slices.Clone(s.alive) }
func (*settableMembers) Changed() <-chan struct{}    { return nil }
func (*settableMembers) Join([]netip.AddrPort) error { return nil }

// TestRoundSeesEveryChange: a round that reuses the last choice (its
// inputs unchanged) still sees each kind of change the next time: a node
// no longer Ready, a node gone, a candidate changed, a member's fitness.
func TestRoundSeesEveryChange(t *testing.T) {
	ctx := context.Background()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	node := func(m member.Member, rv string, ready v1.ConditionStatus) *v1.Node {
		n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: m.Name, ResourceVersion: rv},
			Status: v1.NodeStatus{Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: ready}}}}
		for _, a := range m.Addresses {
			n.Status.Addresses = append(n.Status.Addresses, v1.NodeAddress{Type: v1.NodeInternalIP, Address: a.String()})
		}
		return n
	}
	for _, m := range l2Nodes {
		if err := idx.Add(node(m, "1", v1.ConditionTrue)); err != nil {
			t.Fatal(err)
		}
	}
	members := &settableMembers{alive: slices.Clone(l2Nodes)}
	for i := range members.alive {
		members.alive[i].Fitness = member.Fit
	}
	cands := NewCandidates()
	for p, hops := range l2Candidates(10) {
		_ = cands.SetPaths(ctx, p, hops)
	}
	w := Watcher{Members: members, Nodes: corelisters.NewNodeLister(idx), Selects: func(labels.Set) bool { return true },
		Self: l2Nodes[0].Addresses, Candidates: cands}
	round := func() Round {
		t.Helper()
		r, ok := w.Round(ctx)
		if !ok {
			t.Fatal("no round")
		}
		// What Choose decides from scratch on the same view: the cache
		// must never differ from it.
		v := r.View
		v.Candidates, _ = cands.Snapshot()
		v.Alive = members.Alive()
		if want := Choose(v); !sameChoice(r.Choice, want) {
			t.Fatalf("round chose %v, Choose on the same view %v", r.Choice.Owners, want.Owners)
		}
		return r
	}
	owns := func(r Round, name string) int {
		n := 0
		for _, hop := range r.Choice.Owners {
			for _, m := range l2Nodes {
				if m.Name == name && slices.Contains(m.Addresses, hop) {
					n++
				}
			}
		}
		return n
	}
	first := round()
	if !first.Choice.Quorum || len(first.Choice.Mine) == 0 || owns(first, "b") == 0 {
		t.Fatalf("first round: quorum %t, mine %v, b owns %d: the case shows nothing", first.Choice.Quorum, first.Choice.Mine, owns(first, "b"))
	}
	if again := round(); len(again.Choice.Owners) != len(first.Choice.Owners) {
		t.Fatalf("the same inputs: %d owners, then %d", len(first.Choice.Owners), len(again.Choice.Owners))
	}

	t.Run("a member's fitness", func(t *testing.T) {
		members.alive[1].Fitness = member.Fitness{Forwards: true, Reach: []netip.Prefix{netip.MustParsePrefix("2001:db8:6::/64")}}
		defer func() { members.alive[1].Fitness = member.Fit }()
		r := round()
		for p, hop := range r.Choice.Owners {
			if p.Addr().Is4() && slices.Contains(l2Nodes[1].Addresses, hop) {
				t.Errorf("%s still owned by b, which reaches only IPv6", p)
			}
		}
	})
	t.Run("a candidate", func(t *testing.T) {
		p := netip.MustParsePrefix("198.18.6.1/32")
		_ = cands.SetPaths(ctx, p, []netip.Addr{l2Nodes[2].Addresses[0]})
		if got := round().Choice.Owners[p]; got != l2Nodes[2].Addresses[0] {
			t.Errorf("%s owned by %s, want c, its only candidate", p, got)
		}
	})
	t.Run("a node no longer Ready", func(t *testing.T) {
		_ = idx.Update(node(l2Nodes[1], "2", v1.ConditionUnknown))
		r := round()
		if _, ok := r.View.Expected["b"]; ok || owns(r, "b") != 0 {
			t.Errorf("b not Ready: still expected, or owns %d addresses", owns(r, "b"))
		}
		_ = idx.Update(node(l2Nodes[1], "3", v1.ConditionTrue))
		if r := round(); owns(r, "b") == 0 {
			t.Error("b Ready again: owns nothing")
		}
	})
	t.Run("a node gone", func(t *testing.T) {
		_ = idx.Delete(node(l2Nodes[2], "1", v1.ConditionTrue))
		r := round()
		if _, ok := r.View.Expected["c"]; ok || owns(r, "c") != 0 {
			t.Errorf("c deleted: still expected, or owns %d addresses", owns(r, "c"))
		}
	})
}

func sameChoice(a, b Choice) bool {
	if a.Quorum != b.Quorum || len(a.Owners) != len(b.Owners) || !slices.Equal(a.Mine, b.Mine) {
		return false
	}
	for p, o := range a.Owners {
		if b.Owners[p] != o {
			return false
		}
	}
	return true
}

// TestOwnerOfAsLists: ownerOf, in one pass, chooses as the rule written
// with lists does (the fit candidates, the held among them if any, the
// first of those by rendezvous hashing), on random fitness and holds.
func TestOwnerOfAsLists(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2)) //nolint:gosec // a fixed sequence of test cases, not a secret
	lists := func(addr netip.Addr, hops []netip.Addr, live map[netip.Addr]member.Fitness) []netip.Addr {
		var up, serving, out []netip.Addr
		for _, h := range hops {
			if f, ok := live[h]; ok {
				up = append(up, h)
				if f.Serves(addr) {
					serving = append(serving, h)
				}
			}
		}
		if len(serving) > 0 {
			up = serving
		}
		for _, h := range up {
			if live[h].Held(addr) {
				out = append(out, h)
			}
		}
		if len(out) == 0 {
			return up
		}
		return out
	}
	for i := range 2000 {
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 19, 0, byte(i)}), 32)
		var hops []netip.Addr
		live := map[netip.Addr]member.Fitness{}
		for j := range 1 + rng.IntN(12) {
			h := netip.AddrFrom4([4]byte{198, 18, 0, byte(j)})
			hops = append(hops, h)
			if rng.IntN(4) == 0 {
				continue // not alive
			}
			f := member.Fitness{Forwards: rng.IntN(3) > 0, AnyAddress: rng.IntN(2) == 0}
			if rng.IntN(4) == 0 {
				f.Holds = []netip.Addr{p.Addr()}
			}
			live[h] = f
		}
		want, wantOK := rendezvous.Owner(p, lists(p.Addr(), hops, live))
		got, ok := ownerOf(p, hops, live)
		if got != want || ok != wantOK {
			t.Fatalf("hops %v, live %v: ownerOf = %s %t, the rule with lists %s %t", hops, live, got, ok, want, wantOK)
		}
	}
}
