package nodes

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudproviderapi "k8s.io/cloud-provider/api"
	servicecontroller "k8s.io/cloud-provider/controllers/service"
)

// readyNode is a Ready node without labels or taints; the changes make the
// table's nodes.
func readyNode(changes ...func(*v1.Node)) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	n.Status.Conditions = []v1.NodeCondition{
		{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse},
		{Type: v1.NodeReady, Status: v1.ConditionTrue},
	}
	for _, c := range changes {
		c(n)
	}
	return n
}

func readiness(conds ...v1.NodeCondition) func(*v1.Node) {
	return func(n *v1.Node) { n.Status.Conditions = conds }
}

func excluded(value string) func(*v1.Node) {
	return func(n *v1.Node) { n.Labels = map[string]string{ExcludeLabel: value} }
}

func tainted(key string, effect v1.TaintEffect) func(*v1.Node) {
	return func(n *v1.Node) { n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: key, Effect: effect}) }
}

// predicates by name, each with the upstream function it mirrors
// (k8s.io/cloud-provider@v0.37.2/controllers/service/controller.go).
var predicates = map[string]Predicate{
	"Ready":          Ready,          // nodeReadyPredicate
	"Initialized":    Initialized,    // none upstream: the service controller ignores the taint
	"NotDeleting":    NotDeleting,    // nodeNotDeletedPredicate
	"Included":       Included,       // nodeIncludedPredicate
	"NotToBeDeleted": NotToBeDeleted, // nodeUnTaintedPredicate
}

// TestPredicatesAgreeWithUpstream: the outcome of each predicate for each
// node is what the upstream function it mirrors returns for that node (read
// from upstream's code: its predicates are unexported). upstreamLB is
// whether upstream's stableNodeSetPredicates, the node set its service
// controller hands to EnsureLoadBalancer and UpdateLoadBalancer, keep the
// node; CarriesLoadBalancerTraffic never keeps a node that upstream drops.
func TestPredicatesAgreeWithUpstream(t *testing.T) {
	for _, tc := range []struct {
		name       string
		node       *v1.Node
		fails      []string // the predicates that reject the node; every other accepts it
		upstreamLB bool
	}{
		{"ready", readyNode(), nil, true},
		// nodeReadyPredicate: only Status True is ready; the first NodeReady
		// condition decides; none is not ready. stableNodeSetPredicates
		// ignore readiness (health checks' job upstream).
		{"not ready", readyNode(readiness(v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionFalse})), []string{"Ready"}, true},
		{"ready unknown", readyNode(readiness(v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionUnknown})), []string{"Ready"}, true},
		{"no Ready condition", readyNode(readiness(v1.NodeCondition{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse})), []string{"Ready"}, true},
		{"no conditions", readyNode(readiness()), []string{"Ready"}, true},
		{"first Ready condition decides", readyNode(readiness(
			v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionFalse},
			v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionTrue})), []string{"Ready"}, true},
		// Not a predicate upstream: the uninitialized taint does not keep a
		// node out of upstream's load balancers.
		{"uninitialized", readyNode(tainted(cloudproviderapi.TaintExternalCloudProvider, v1.TaintEffectNoSchedule)), []string{"Initialized"}, true},
		// nodeNotDeletedPredicate: DeletionTimestamp.IsZero().
		{"being deleted", readyNode(func(n *v1.Node) { now := metav1.Now(); n.DeletionTimestamp = &now }), []string{"NotDeleting"}, false},
		// nodeIncludedPredicate: no label includes; otherwise
		// strconv.ParseBool(value) must succeed and be false.
		{`exclude ""`, readyNode(excluded("")), []string{"Included"}, false},
		{`exclude "true"`, readyNode(excluded("true")), []string{"Included"}, false},
		{`exclude "1"`, readyNode(excluded("1")), []string{"Included"}, false},
		{`exclude "false"`, readyNode(excluded("false")), nil, true},
		{`exclude "False"`, readyNode(excluded("False")), nil, true},
		{`exclude "0"`, readyNode(excluded("0")), nil, true},
		{`exclude "garbage"`, readyNode(excluded("garbage")), []string{"Included"}, false},
		{`exclude "no"`, readyNode(excluded("no")), []string{"Included"}, false},
		{"other labels", readyNode(func(n *v1.Node) { n.Labels = map[string]string{"node-role.kubernetes.io/worker": ""} }), nil, true},
		// nodeUnTaintedPredicate: the key alone decides, whatever the effect.
		{"to be deleted NoSchedule", readyNode(tainted(ToBeDeletedTaint, v1.TaintEffectNoSchedule)), []string{"NotToBeDeleted"}, false},
		{"to be deleted PreferNoSchedule", readyNode(tainted(ToBeDeletedTaint, v1.TaintEffectPreferNoSchedule)), []string{"NotToBeDeleted"}, false},
		{"to be deleted NoExecute", readyNode(tainted(ToBeDeletedTaint, v1.TaintEffectNoExecute)), []string{"NotToBeDeleted"}, false},
		// Other taints, the autoscaler's soft one among them, exclude nothing.
		{"other taints", readyNode(
			tainted("DeletionCandidateOfClusterAutoscaler", v1.TaintEffectPreferNoSchedule),
			tainted(v1.TaintNodeUnschedulable, v1.TaintEffectNoSchedule),
			tainted("node-role.kubernetes.io/control-plane", v1.TaintEffectNoSchedule)), nil, true},
		{"several at once", readyNode(
			readiness(v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionFalse}),
			excluded("true"),
			tainted(ToBeDeletedTaint, v1.TaintEffectNoSchedule)), []string{"Included", "NotToBeDeleted", "Ready"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for name, p := range predicates {
				if got, want := p(tc.node), !slices.Contains(tc.fails, name); got != want {
					t.Errorf("%s = %v, want %v", name, got, want)
				}
			}
			carries := CarriesLoadBalancerTraffic(tc.node)
			if want := len(tc.fails) == 0; carries != want {
				t.Errorf("CarriesLoadBalancerTraffic = %v, want %v", carries, want)
			}
			if carries && !tc.upstreamLB {
				t.Error("carries load-balancer traffic, but upstream's load balancers drop the node")
			}
			upstream := All(tc.node, NotDeleting, Included, NotToBeDeleted) // stableNodeSetPredicates
			if upstream != tc.upstreamLB {
				t.Errorf("upstream's node set keeps it: %v, want %v", upstream, tc.upstreamLB)
			}
		})
	}
}

func TestTaintsAreUpstreams(t *testing.T) {
	for _, tc := range []struct{ name, ours, upstream string }{
		{"ToBeDeletedTaint", ToBeDeletedTaint, servicecontroller.ToBeDeletedTaint},
		{"UninitializedTaint", UninitializedTaint, cloudproviderapi.TaintExternalCloudProvider},
		{"ShutdownTaint", ShutdownTaint, cloudproviderapi.TaintNodeShutdown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.ours != tc.upstream {
				t.Errorf("%s = %q, upstream's is %q", tc.name, tc.ours, tc.upstream)
			}
		})
	}
}

func TestAll(t *testing.T) {
	n := readyNode()
	never := func(*v1.Node) bool { return false }
	for _, tc := range []struct {
		name  string
		preds []Predicate
		want  bool
	}{
		{"none", nil, true},
		{"one true", []Predicate{Ready}, true},
		{"one false", []Predicate{Ready, never}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := All(n, tc.preds...); got != tc.want {
				t.Errorf("All = %v, want %v", got, tc.want)
			}
		})
	}
}
