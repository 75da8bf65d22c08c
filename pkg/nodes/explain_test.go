package nodes

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

func TestWhy(t *testing.T) {
	notReady := readiness(v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionFalse})
	inRack := func(n *v1.Node) { n.Labels = map[string]string{"rack": "a"} }
	l2Selector := Named{func(n *v1.Node) bool { return labels.Set(n.Labels).Has("rack") }, "not selected by l2.nodeSelector"}
	tests := []struct {
		name  string
		nodes []*v1.Node
		extra []Named
		want  string
	}{
		{"no nodes", nil, nil, "no eligible node: the cluster has no nodes"},
		{"one eligible", []*v1.Node{readyNode(excluded("true")), readyNode()}, nil, ""},
		{"all control-plane", []*v1.Node{readyNode(excluded("")), readyNode(excluded("")), readyNode(excluded("true"))}, nil,
			"no eligible node among 3 nodes: 3 labelled " + ExcludeLabel + " (kubeadm puts it on control-plane nodes"},
		{"excluded and not ready", []*v1.Node{readyNode(excluded("")), readyNode(notReady)}, nil,
			"no eligible node among 2 nodes: 1 labelled " + ExcludeLabel},
		{"one node, two reasons", []*v1.Node{readyNode(excluded(""), notReady)}, nil,
			"no eligible node among 1 node: 1 labelled " + ExcludeLabel},
		{"autoscaler", []*v1.Node{readyNode(tainted(ToBeDeletedTaint, v1.TaintEffectNoSchedule))}, nil,
			"no eligible node among 1 node: 1 tainted " + ToBeDeletedTaint},
		{"selector", []*v1.Node{readyNode(), readyNode(inRack, notReady)}, []Named{l2Selector},
			"no eligible node among 2 nodes: 1 not Ready, 1 not selected by l2.nodeSelector"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Why(tt.nodes, append(LoadBalancerTraffic, tt.extra...)...)
			if !strings.HasPrefix(got, tt.want) || (tt.want == "") != (got == "") {
				t.Errorf("Why = %q, want prefix %q", got, tt.want)
			}
		})
	}
	if got := Why([]*v1.Node{readyNode(excluded(""), notReady)}, LoadBalancerTraffic...); !strings.HasSuffix(got, ", 1 not Ready") {
		t.Errorf("Why = %q, want every failing predicate counted", got)
	}
}
