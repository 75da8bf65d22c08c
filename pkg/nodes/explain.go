package nodes

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Named is a predicate with what a node that fails it is, as a Service's
// condition tells its owner why no node carries its address.
type Named struct {
	Pred Predicate
	// Fails follows a count of nodes: "3 not Ready".
	Fails string
}

// LoadBalancerTraffic are the predicates of CarriesLoadBalancerTraffic,
// named. The exclude label's words say where it comes from, since kubeadm
// sets it on every control-plane node and an all-control-plane lab
// otherwise has no eligible node without a hint why.
var LoadBalancerTraffic = []Named{
	{Included, "labelled " + ExcludeLabel + " (kubeadm puts it on control-plane nodes; remove it from nodes that should carry LoadBalancer traffic)"},
	{Ready, "not Ready"},
	{Initialized, "not initialized (tainted " + UninitializedTaint + ")"},
	{NotDeleting, "being deleted"},
	{NotToBeDeleted, "tainted " + ToBeDeletedTaint},
}

// Why says, when no node of list satisfies every predicate, how many nodes
// each predicate excludes: "no eligible node among 3 nodes: 3 labelled
// ..., 1 not Ready". A node failing two predicates counts under both. It is
// empty when some node satisfies them all.
func Why(list []*v1.Node, preds ...Named) string {
	if len(list) == 0 {
		return "no eligible node: the cluster has no nodes"
	}
	fails := make([]int, len(preds))
	for _, n := range list {
		ok := true
		for i, p := range preds {
			if !p.Pred(n) {
				fails[i]++
				ok = false
			}
		}
		if ok {
			return ""
		}
	}
	var parts []string
	for i, p := range preds {
		if fails[i] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", fails[i], p.Fails))
		}
	}
	noun := "nodes"
	if len(list) == 1 {
		noun = "node"
	}
	return fmt.Sprintf("no eligible node among %d %s: %s", len(list), noun, strings.Join(parts, ", "))
}
