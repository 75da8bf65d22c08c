package elect

import (
	"context"
	"fmt"
	"net/netip"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/limits"
	"github.com/metal-ccm/metal-ccm/pkg/l2/member"
	"github.com/metal-ccm/metal-ccm/pkg/rendezvous"
)

// BenchmarkRound is one round of the loop at the goal size: 5,000 nodes,
// 1,000 L2 addresses whose candidates are every node, and agents on none
// (members 0, the bench's pool) or on every node (members 5000).
func BenchmarkRound(b *testing.B) {
	const nodes, addrs = 5000, 1000
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	hops := make([]netip.Addr, nodes)
	var all []member.Member
	for i := range nodes {
		a := netip.AddrFrom4([4]byte{198, 18, byte(i >> 8), byte(i)})
		hops[i] = a
		name := fmt.Sprintf("node-%d", i)
		_ = idx.Add(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1"},
			Status: v1.NodeStatus{Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}},
				Addresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: a.String()}}}})
		all = append(all, member.Member{Name: name, Addresses: []netip.Addr{a}, From: a, Fitness: member.Fit})
	}
	cands := NewCandidates()
	for i := range addrs {
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 19, byte(i >> 8), byte(i)}), 32)
		_ = cands.SetPaths(context.Background(), p, rendezvous.Pick(p, hops, limits.MaxNextHops))
	}
	// changed: a candidate changes before each round, so that it chooses
	// again (otherwise it takes the last round's choice).
	for _, changed := range []bool{false, true} {
		for _, members := range []int{0, nodes} {
			b.Run(fmt.Sprintf("members=%d/changed=%t", members, changed), func(b *testing.B) {
				w := Watcher{Members: &settableMembers{alive: all[:members]}, Nodes: corelisters.NewNodeLister(idx),
					Selects: func(labels.Set) bool { return members > 0 }, Candidates: cands}
				p := netip.MustParsePrefix("198.19.0.0/32")
				for i := 0; b.Loop(); i++ {
					if changed {
						_ = cands.SetPaths(context.Background(), p, hops[i%2:][:limits.MaxNextHops])
					}
					if _, ok := w.Round(context.Background()); !ok {
						b.Fatal("no round")
					}
				}
			})
		}
	}
}
