// Package nodes says which nodes qualify for what, as named predicates, so
// that the announcer, the provider and any node agent decide alike. Where
// upstream's service controller (k8s.io/cloud-provider/controllers/service)
// has the same rule, the predicate reads the node exactly as upstream does:
// a node that upstream's load balancers drop is never announced here.
package nodes

import (
	"strconv"

	v1 "k8s.io/api/core/v1"
)

// Predicate says whether a node qualifies.
type Predicate func(*v1.Node) bool

// All reports whether node satisfies every predicate; with none it is true.
func All(node *v1.Node, preds ...Predicate) bool {
	for _, p := range preds {
		if !p(node) {
			return false
		}
	}
	return true
}

// ExcludeLabel takes a node out of external load balancers; see Included
// for how its value is read.
const ExcludeLabel = v1.LabelNodeExcludeBalancers

// UninitializedTaint is the taint the kubelet sets with
// --cloud-provider=external until a cloud provider initializes the node
// (upstream's cloudproviderapi.TaintExternalCloudProvider). Written here,
// not imported, so that the node agent, which links this package, links
// nothing of k8s.io/cloud-provider (cmd/metal-node-agent's deps test).
const UninitializedTaint = "node.cloudprovider.kubernetes.io/uninitialized"

// ShutdownTaint is the taint upstream's node lifecycle controller puts on
// a node whose provider says its machine is shut down
// (cloudproviderapi.TaintNodeShutdown), written here for the same reason.
const ShutdownTaint = "node.cloudprovider.kubernetes.io/shutdown"

// ToBeDeletedTaint is the taint the cluster autoscaler puts on a node it is
// about to delete (upstream's service controller calls it ToBeDeletedTaint).
const ToBeDeletedTaint = "ToBeDeletedByClusterAutoscaler"

// Ready: the node's NodeReady condition is True. Like upstream's
// nodeReadyPredicate, the first NodeReady condition decides, and a node
// without one is not ready.
func Ready(node *v1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// Initialized: the node no longer has the taint the kubelet sets with
// --cloud-provider=external, so a cloud provider has given it its addresses
// and providerID. Until then its addresses are not to be trusted.
func Initialized(node *v1.Node) bool {
	return !hasTaint(node, UninitializedTaint)
}

// NotDeleting: the node has no deletionTimestamp (upstream's
// nodeNotDeletedPredicate). A node being deleted may vanish at any moment.
func NotDeleting(node *v1.Node) bool {
	return node.DeletionTimestamp.IsZero()
}

// Included: the node is not labelled ExcludeLabel, or the label's value
// parses (strconv.ParseBool) as false ("false", "0", "f", ...). Any other
// value excludes, including the empty one and any that does not parse. This
// is upstream's nodeIncludedPredicate to the letter, so that one label keeps
// a node out of (or in) both upstream's load balancers and this project's.
func Included(node *v1.Node) bool {
	v, ok := node.Labels[ExcludeLabel]
	if !ok {
		return true
	}
	exclude, err := strconv.ParseBool(v)
	return err == nil && !exclude
}

// NotToBeDeleted: the node has no ToBeDeletedTaint, whatever its effect
// (upstream's nodeUnTaintedPredicate). Traffic leaves a node the autoscaler
// is draining before the node goes, not with it.
func NotToBeDeleted(node *v1.Node) bool {
	return !hasTaint(node, ToBeDeletedTaint)
}

// CarriesLoadBalancerTraffic: the node may receive the traffic of
// LoadBalancer addresses. It is upstream's node set for load balancers
// (nodeNotDeletedPredicate, nodeIncludedPredicate, nodeUnTaintedPredicate)
// plus Ready and Initialized: upstream leaves readiness to the load
// balancer's health checks, and a BGP next hop has none, so a node that is
// not ready, or whose addresses are not yet known, must not be one.
func CarriesLoadBalancerTraffic(node *v1.Node) bool {
	for _, p := range LoadBalancerTraffic {
		if !p.Pred(node) {
			return false
		}
	}
	return true
}

func hasTaint(node *v1.Node, key string) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}
