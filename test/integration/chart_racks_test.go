package integration

import (
	"path/filepath"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
)

// TestChartAgentRacks renders the node agents' example, whose two peers
// each select one rack's nodes, with agent.racks naming both racks: one
// DaemonSet per rack, on that rack's nodes, mounting only its rack's
// password, and one for the nodes in no rack, kept off the racks' nodes
// by affinity and mounting no password (no peer selects its nodes).
func TestChartAgentRacks(t *testing.T) {
	out := runHelm(t, helmBinary(t), "template", "metal-ccm", chartDir, "--namespace", "kube-system",
		"-f", filepath.Join(chartDir, "examples", "node-agents.yaml"))
	const zone = "topology.kubernetes.io/zone"
	want := map[string]struct {
		selector map[string]string
		keys     []string
	}{
		agentName:            {},
		agentName + "-rack1": {selector: map[string]string{zone: "rack1"}, keys: []string{"rack1"}},
		agentName + "-rack2": {selector: map[string]string{zone: "rack2"}, keys: []string{"rack2"}},
	}
	seen := map[string]bool{}
	for _, o := range decodeAll(t, out) {
		if o.GetKind() != "DaemonSet" || !isAgent(o) {
			continue
		}
		var ds appsv1.DaemonSet
		fromUnstructured(t, o, &ds)
		w, ok := want[ds.Name]
		if !ok {
			t.Errorf("unexpected DaemonSet %s", ds.Name)
			continue
		}
		seen[ds.Name] = true
		spec := ds.Spec.Template.Spec
		var keys []string
		for _, v := range spec.Volumes {
			if v.Name == "bgp-passwords" && v.Secret != nil {
				for _, it := range v.Secret.Items {
					keys = append(keys, it.Key)
				}
			}
		}
		if !slices.Equal(keys, w.keys) {
			t.Errorf("DaemonSet %s mounts the BGP passwords %v, want %v", ds.Name, keys, w.keys)
		}
		if len(w.selector) > 0 && !equalMaps(spec.NodeSelector, w.selector) {
			t.Errorf("DaemonSet %s runs on nodeSelector %v, want %v", ds.Name, spec.NodeSelector, w.selector)
		}
		if !labelsMatch(ds.Spec.Selector.MatchLabels, ds.Spec.Template.Labels) {
			t.Errorf("DaemonSet %s: its selector %v does not select its own pods %v", ds.Name, ds.Spec.Selector.MatchLabels, ds.Spec.Template.Labels)
		}
		if ds.Name != agentName {
			continue
		}
		// The nodes in no rack: NotIn both racks' values.
		var notIn []string
		if a := spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
				for _, e := range term.MatchExpressions {
					if e.Key == zone && e.Operator == v1.NodeSelectorOpNotIn {
						notIn = append(notIn, e.Values...)
					}
				}
			}
		}
		if !slices.Equal(notIn, []string{"rack1", "rack2"}) {
			t.Errorf("DaemonSet %s kept off the racks %v, want [rack1 rack2]", ds.Name, notIn)
		}
	}
	if len(seen) != len(want) {
		t.Errorf("rendered the agent DaemonSets %v, want %d", seen, len(want))
	}
}

func equalMaps(a, b map[string]string) bool {
	return len(a) == len(b) && labelsMatch(a, b)
}

// labelsMatch reports whether labels has every key of selector, equal.
func labelsMatch(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}
