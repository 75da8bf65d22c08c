package agent

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metal-ccm/metal-ccm/pkg/nodes"
)

// TestDecideStop: the node that stops serving, or a DaemonSet that no
// longer runs an agent on it, is a Cease; the same node's agent being
// replaced is a graceful restart.
func TestDecideStop(t *testing.T) {
	node := func(mod func(*v1.Node)) *v1.Node {
		n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"metal-ccm.io/rack": "r1"}}}
		if mod != nil {
			mod(n)
		}
		return n
	}
	ds := func(mod func(*daemonSet)) *daemonSet {
		d := &daemonSet{}
		d.Spec.Template.Spec.NodeSelector = map[string]string{"metal-ccm.io/rack": "r1"}
		if mod != nil {
			mod(d)
		}
		return d
	}
	now := metav1.Now()
	taint := func(key string) func(*v1.Node) {
		return func(n *v1.Node) {
			n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: key, Effect: v1.TaintEffectNoSchedule})
		}
	}
	for _, c := range []struct {
		name    string
		node    *v1.Node
		ds      *daemonSet
		dsKnown bool
		leave   bool
		why     string
	}{
		{"rolling update", node(nil), ds(nil), true, false, "DaemonSet runs an agent"},
		{"no DaemonSet given, node serves", node(nil), nil, false, false, "restart is assumed"},
		{"node gone", nil, ds(nil), true, true, "node is gone"},
		{"node being deleted", node(func(n *v1.Node) { n.DeletionTimestamp = &now }), ds(nil), true, true, "being deleted"},
		{"autoscaler deletes it", node(taint(nodes.ToBeDeletedTaint)), ds(nil), true, true, nodes.ToBeDeletedTaint},
		{"cordoned", node(func(n *v1.Node) { n.Spec.Unschedulable = true }), ds(nil), false, true, "cordoned"},
		{"out of service", node(taint(v1.TaintNodeOutOfService)), ds(nil), true, true, "out of service"},
		{"shut down", node(taint(nodes.ShutdownTaint)), ds(nil), true, true, "shut down"},
		{"excluded", node(func(n *v1.Node) { n.Labels[nodes.ExcludeLabel] = "true" }), ds(nil), true, true, "excluded"},
		{"DaemonSet gone", node(nil), nil, true, true, "DaemonSet is gone"},
		{"DaemonSet being deleted", node(nil), ds(func(d *daemonSet) { d.Metadata.DeletionTimestamp = &now }), true, true, "DaemonSet is being deleted"},
		{"node no longer selected", node(nil), ds(func(d *daemonSet) { d.Spec.Template.Spec.NodeSelector["metal-ccm.io/rack"] = "r2" }), true, true, "no longer selects"},
		{"affinity excludes the node", node(nil), ds(func(d *daemonSet) {
			d.Spec.Template.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
				NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "metal-ccm.io/rack", Operator: v1.NodeSelectorOpNotIn, Values: []string{"r1"}}}}},
			}}}
		}), true, true, "no longer selects"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := decideStop(c.node, c.ds, c.dsKnown)
			if got.Leave != c.leave || !strings.Contains(got.Why, c.why) {
				t.Errorf("decideStop = %+v; want leave %v, why containing %q", got, c.leave, c.why)
			}
		})
	}
}
