package elect

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/metal-ccm/metal-ccm/pkg/l2/member"
)

// l2Nodes are three nodes, each with an IPv4 and an IPv6 address.
var l2Nodes = []member.Member{
	{Name: "a", Addresses: []netip.Addr{netip.MustParseAddr("198.18.5.1"), netip.MustParseAddr("2001:db8:5::1")}, From: netip.MustParseAddr("198.18.5.1")},
	{Name: "b", Addresses: []netip.Addr{netip.MustParseAddr("198.18.5.2"), netip.MustParseAddr("2001:db8:5::2")}, From: netip.MustParseAddr("198.18.5.2")},
	{Name: "c", Addresses: []netip.Addr{netip.MustParseAddr("198.18.5.3"), netip.MustParseAddr("2001:db8:5::3")}, From: netip.MustParseAddr("198.18.5.3")},
}

// l2Candidates are n addresses of each family, every node a candidate.
func l2Candidates(n int) map[netip.Prefix][]netip.Addr {
	out := map[netip.Prefix][]netip.Addr{}
	for i := range n {
		v4 := netip.MustParseAddr(fmt.Sprintf("198.18.6.%d", i+1))
		v6 := netip.MustParseAddr(fmt.Sprintf("2001:db8:6::%x", i+1))
		for _, m := range l2Nodes {
			out[netip.PrefixFrom(v4, 32)] = append(out[netip.PrefixFrom(v4, 32)], m.Addresses[0])
			out[netip.PrefixFrom(v6, 128)] = append(out[netip.PrefixFrom(v6, 128)], m.Addresses[1])
		}
	}
	return out
}

// expectedOf is the expected nodes of members, each with its addresses.
func expectedOf(ms []member.Member) map[string][]netip.Addr {
	out := make(map[string][]netip.Addr, len(ms))
	for _, m := range ms {
		out[m.Name] = m.Addresses
	}
	return out
}

// answered is who answers for each address when every node decides from
// the same alive set.
func answered(cands map[netip.Prefix][]netip.Addr, alive []member.Member, expected map[string][]netip.Addr) map[netip.Addr][]string {
	out := map[netip.Addr][]string{}
	for _, self := range alive {
		c := Choose(View{Candidates: cands, Alive: alive, Expected: expected, Self: self.Addresses})
		for _, a := range c.Mine {
			out[a] = append(out[a], self.Name)
		}
	}
	return out
}

func TestChooseOneOwnerPerAddress(t *testing.T) {
	cands := l2Candidates(30)
	all := expectedOf(l2Nodes)
	got := answered(cands, l2Nodes, all)
	perNode := map[string]int{}
	for p := range cands {
		who := got[p.Addr()]
		if len(who) != 1 {
			t.Fatalf("%s answered by %v, want exactly one node", p.Addr(), who)
		}
		perNode[who[0]]++
	}
	// Spread: 60 addresses over 3 nodes; each gets some.
	for n := range all {
		if perNode[n] == 0 {
			t.Errorf("node %s answers for no address of 60: %v", n, perNode)
		}
	}

	t.Run("a dead owner's addresses move, the others stay", func(t *testing.T) {
		alive := l2Nodes[1:] // a is gone; b and c are 2 of 3
		after := answered(cands, alive, all)
		for p := range cands {
			was, now := got[p.Addr()][0], after[p.Addr()]
			if len(now) != 1 {
				t.Fatalf("%s answered by %v after a left, want one node", p.Addr(), now)
			}
			if was != "a" && now[0] != was {
				t.Errorf("%s moved from %s to %s, though %s is alive", p.Addr(), was, now[0], was)
			}
		}
	})

	t.Run("a minority answers nothing", func(t *testing.T) {
		for _, self := range l2Nodes {
			c := Choose(View{Candidates: cands, Alive: []member.Member{self}, Expected: all, Self: self.Addresses})
			if c.Quorum || len(c.Mine) > 0 {
				t.Errorf("%s alone of 3: majority %v, answers %v; want none", self.Name, c.Quorum, c.Mine)
			}
		}
	})

	t.Run("only alive candidates own", func(t *testing.T) {
		// The address's only candidate is b (externalTrafficPolicy Local,
		// b has the endpoint); with b dead nobody owns it.
		p := netip.MustParsePrefix("198.18.7.1/32")
		one := map[netip.Prefix][]netip.Addr{p: {l2Nodes[1].Addresses[0]}}
		if got := answered(one, l2Nodes, all)[p.Addr()]; !slices.Equal(got, []string{"b"}) {
			t.Errorf("Local address with its endpoint on b answered by %v, want [b]", got)
		}
		alive := []member.Member{l2Nodes[0], l2Nodes[2]}
		if got := answered(one, alive, all)[p.Addr()]; len(got) != 0 {
			t.Errorf("address whose only candidate is dead answered by %v, want nobody", got)
		}
	})
}

func TestExpectedAgents(t *testing.T) {
	mk := func(name string, ready v1.ConditionStatus, lbls map[string]string, deleting bool) *v1.Node {
		n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls},
			Status: v1.NodeStatus{Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: ready}}}}
		if deleting {
			now := metav1.Now()
			n.DeletionTimestamp = &now
		}
		return n
	}
	list := []*v1.Node{
		mk("ready", v1.ConditionTrue, map[string]string{"l2": "yes"}, false),
		mk("unknown", v1.ConditionUnknown, map[string]string{"l2": "yes"}, false),
		mk("deleting", v1.ConditionTrue, map[string]string{"l2": "yes"}, true),
		mk("unselected", v1.ConditionTrue, map[string]string{"l2": "no"}, false),
		mk("another", v1.ConditionTrue, map[string]string{"l2": "yes"}, false),
	}
	sel := labels.SelectorFromSet(labels.Set{"l2": "yes"})
	list[0].Status.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "198.18.5.1"}, {Type: v1.NodeExternalIP, Address: "198.18.9.1"},
		{Type: v1.NodeInternalIP, Address: "2001:db8:5::1"}}
	got := ExpectedAgents(list, func(s labels.Set) bool { return sel.Matches(s) })
	want := map[string][]netip.Addr{"another": nil, "ready": {netip.MustParseAddr("198.18.5.1"), netip.MustParseAddr("2001:db8:5::1")}}
	if !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("ExpectedAgents = %v, want %v", got, want)
	}
}

// TestOnlyBoundMembersCount: a member counts, and may answer, only as the
// agent of an expected node, from that node's addresses.
func TestOnlyBoundMembersCount(t *testing.T) {
	all := expectedOf(l2Nodes)
	p := netip.MustParsePrefix("198.18.7.1/32")
	rogueAddr := netip.MustParseAddr("198.18.5.99")
	for _, tc := range []struct {
		name  string
		rogue member.Member
	}{
		{"a node's name from another address", member.Member{Name: "a", Addresses: []netip.Addr{rogueAddr}, From: rogueAddr}},
		{"a node's name and claims, from another address", member.Member{Name: "a", Addresses: l2Nodes[0].Addresses, From: rogueAddr}},
		{"a node's name and address, and one more", member.Member{Name: "a", Addresses: []netip.Addr{l2Nodes[0].Addresses[0], rogueAddr}, From: l2Nodes[0].From}},
		{"a node l2.nodeSelector leaves out", member.Member{Name: "unselected", Addresses: []netip.Addr{rogueAddr}, From: rogueAddr}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// a is dead; the rogue is the only candidate of the address
			// besides a, and claims to be a (or another node).
			cands := map[netip.Prefix][]netip.Addr{p: {l2Nodes[0].Addresses[0], rogueAddr}}
			alive := []member.Member{tc.rogue, l2Nodes[1]}
			c := Choose(View{Candidates: cands, Alive: alive, Expected: all, Self: l2Nodes[1].Addresses})
			if c.Quorum {
				t.Error("b and the rogue are a majority of 3: the rogue counted")
			}
			if owner, ok := c.Owners[p]; ok {
				t.Errorf("the address is owned by %s: the rogue's claim counted", owner)
			}
			if c.Ignored != 1 || len(c.Members) != 1 || c.Members[0].Name != "b" {
				t.Errorf("members %v, ignored %d; want b counted and the rogue ignored", c.Members, c.Ignored)
			}
		})
	}
}

// TestChooseFitness: an address is owned by a live candidate whose node
// can carry it (its kube-proxy passes, an interface reaches the address);
// when no live candidate can, by any live one (fail open).
func TestChooseFitness(t *testing.T) {
	cands := l2Candidates(20)
	all := expectedOf(l2Nodes)
	withFitness := func(fs ...member.Fitness) []member.Member {
		out := slices.Clone(l2Nodes)
		for i := range out {
			out[i].Fitness = fs[i]
		}
		return out
	}
	fit := member.Fitness{Forwards: true, AnyAddress: true}
	base := answered(cands, withFitness(fit, fit, fit), all)
	// The zero Fitness (not checked yet) everywhere: as if all were fit.
	if got := answered(cands, l2Nodes, all); !maps.EqualFunc(got, base, slices.Equal) {
		t.Errorf("every node unfit: owners %v, want those of every node fit %v", got, base)
	}
	for _, tc := range []struct {
		name string
		a    member.Fitness
		// serves: whether a may own the address.
		serves func(netip.Addr) bool
	}{
		{"a's kube-proxy fails", member.Fitness{AnyAddress: true}, func(netip.Addr) bool { return false }},
		{"a reaches only the IPv4 segment", member.Fitness{Forwards: true, Reach: []netip.Prefix{netip.MustParsePrefix("198.18.6.0/24")}},
			netip.Addr.Is4},
		{"a reaches no segment", member.Fitness{Forwards: true}, func(netip.Addr) bool { return false }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := answered(cands, withFitness(tc.a, fit, fit), all)
			moved := 0
			for p := range cands {
				was, now := base[p.Addr()][0], got[p.Addr()]
				switch {
				case len(now) != 1:
					t.Fatalf("%s answered by %v, want one node", p.Addr(), now)
				case was == "a" && !tc.serves(p.Addr()):
					if now[0] == "a" {
						t.Errorf("%s still answered by a, which cannot carry it", p.Addr())
					}
					moved++
				case now[0] != was:
					t.Errorf("%s moved from %s to %s, though %s can carry it", p.Addr(), was, now[0], was)
				}
			}
			if moved == 0 {
				t.Error("a owned no address it cannot carry: the case shows nothing")
			}
		})
	}
	t.Run("no live candidate fit: the live ones (fail open)", func(t *testing.T) {
		unfit := member.Fitness{AnyAddress: true}
		if got := answered(cands, withFitness(unfit, unfit, unfit), all); !maps.EqualFunc(got, base, slices.Equal) {
			t.Errorf("every kube-proxy failing: owners %v, want %v", got, base)
		}
	})
}

// TestNodeAddressNotAnswered: an address that is a node's own InternalIP
// (in an L2 pool by mistake) is answered by no agent: the node's kernel
// answers for it already.
func TestNodeAddressNotAnswered(t *testing.T) {
	own := netip.PrefixFrom(l2Nodes[1].Addresses[0], 32)
	cands := map[netip.Prefix][]netip.Addr{own: {l2Nodes[0].Addresses[0], l2Nodes[1].Addresses[0], l2Nodes[2].Addresses[0]}}
	if got := answered(cands, l2Nodes, expectedOf(l2Nodes)); len(got[own.Addr()]) != 0 {
		t.Errorf("node b's own address answered by the agents %v", got[own.Addr()])
	}
}
