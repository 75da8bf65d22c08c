package integration

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/metal-ccm/metal-ccm/pkg/nodes"
	"github.com/metal-ccm/metal-ccm/pkg/svcstatus"
	"github.com/metal-ccm/metal-ccm/test/framework"
)

// TestAllNodesExcluded checks that when kubeadm's exclude label is on every
// node (an all-control-plane cluster), the Service's Announced condition
// and an Event name the label and how many nodes carry it.
func TestAllNodesExcluded(t *testing.T) {
	cfg := lbConfig(174) + "bgp:\n  asn: 64512\n  peers:\n  - {address: 198.18.176.1, asn: 64500}\nserviceStatus:\n  minInterval: 1s\n"
	startCCM(t, framework.CCMOptions{CloudConfig: writeConfig(t, cfg)})
	ctx := context.Background()
	label, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{nodes.ExcludeLabel: ""}}})
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range []string{"excluded-a", "excluded-b"} {
		registerNode(t, n, true, []string{"198.18.175.10", "198.18.175.11"}[i])
		waitInitialized(t, n, 30*time.Second)
		if _, err := client.CoreV1().Nodes().Patch(ctx, n, types.MergePatchType, label, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ns := newNamespace(t)
	const wait = 30 * time.Second
	createLB(t, ns, "web")
	waitIPs(t, ns, "web", 1, wait)
	svc := framework.WaitServiceCondition(t, client, ns, "web", svcstatus.TypeAnnounced, metav1.ConditionFalse, svcstatus.ReasonNoEligibleNode, wait)
	c, _ := framework.ServiceCondition(svc, svcstatus.TypeAnnounced)
	want := "2 labelled " + nodes.ExcludeLabel + " (kubeadm puts it on control-plane nodes"
	if !strings.Contains(c.Message, want) {
		t.Errorf("condition message %q does not contain %q", c.Message, want)
	}
	if e := waitEvent(t, ns, "web", svcstatus.ReasonNoEligibleNode); !strings.Contains(e.Message, want) {
		t.Errorf("event message %q does not contain %q", e.Message, want)
	}
}
