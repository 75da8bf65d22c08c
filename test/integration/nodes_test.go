package integration

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/metal-ccm/metal-ccm/test/framework"
)

func TestNodesAreInitialized(t *testing.T) {
	cfg := writeConfig(t, `nodes:
  defaultInstanceType: vm
  inventory:
  - name: init-a
    id: rack1-srv01
    addresses:
    - {type: InternalIP, address: 198.18.1.10}
    - {type: InternalIP, address: "2001:db8:1::10"}
    - {type: Hostname, address: init-a}
    instanceType: r640
    labels:
      metal-ccm.io/rack: rack1
  - name: init-b
    region: dc2
  topology:
  - {subnet: 198.18.1.0/24, region: dc1, zone: dc1-rack1}
  - {subnet: 198.18.2.0/24, region: dc1, zone: dc1-rack2}
`)
	startCCM(t, framework.CCMOptions{CloudConfig: cfg})
	registerNode(t, "init-a", true, "198.18.1.10", "2001:db8:1::10")
	registerNode(t, "init-b", true, "198.18.2.11")
	registerNode(t, "init-c", true, "198.18.1.12", "2001:db8:1::12")

	for _, tc := range []struct {
		node, providerID, instanceType, region, zone string
		addresses                                    []v1.NodeAddress
		labels                                       map[string]string
	}{
		{
			node: "init-a", providerID: "metal://inventory/rack1-srv01", instanceType: "r640", region: "dc1", zone: "dc1-rack1",
			addresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "198.18.1.10"}, {Type: v1.NodeInternalIP, Address: "2001:db8:1::10"}, {Type: v1.NodeHostName, Address: "init-a"}},
			labels:    map[string]string{"metal-ccm.io/rack": "rack1"},
		},
		{
			// Inventory region wins; the zone comes from the topology rule.
			node: "init-b", providerID: "metal://inventory/init-b", instanceType: "vm", region: "dc2", zone: "dc1-rack2",
			addresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "198.18.2.11"}, {Type: v1.NodeHostName, Address: "init-b"}},
		},
		{
			// Not in the inventory: discovered from the provided node IPs.
			node: "init-c", providerID: "metal://discovered/init-c", instanceType: "vm", region: "dc1", zone: "dc1-rack1",
			addresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "198.18.1.12"}, {Type: v1.NodeInternalIP, Address: "2001:db8:1::12"}, {Type: v1.NodeHostName, Address: "init-c"}},
		},
	} {
		t.Run(tc.node, func(t *testing.T) {
			n := waitInitialized(t, tc.node, 30*time.Second)
			if n.Spec.ProviderID != tc.providerID {
				t.Errorf("providerID = %q, want %q", n.Spec.ProviderID, tc.providerID)
			}
			want := map[string]string{
				v1.LabelInstanceTypeStable: tc.instanceType,
				v1.LabelTopologyRegion:     tc.region,
				v1.LabelTopologyZone:       tc.zone,
			}
			for k, v := range tc.labels {
				want[k] = v
			}
			for k, v := range want {
				if got := n.Labels[k]; got != v {
					t.Errorf("label %s = %q, want %q", k, got, v)
				}
			}
			// Addresses are patched right after the taint goes; wait for them.
			err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
				n, err := client.CoreV1().Nodes().Get(ctx, tc.node, metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				return slices.Equal(n.Status.Addresses, tc.addresses), nil
			})
			if err != nil {
				n, _ := client.CoreV1().Nodes().Get(context.Background(), tc.node, metav1.GetOptions{})
				t.Errorf("addresses = %v, want %v", n.Status.Addresses, tc.addresses)
			}
		})
	}
}

func TestMachineRemovedFromInventoryDeletesItsNotReadyNode(t *testing.T) {
	before := `nodes:
  inventory:
  - {name: gone-x}
  - {name: gone-y}
`
	cfg := writeConfig(t, before)
	ccm := startCCM(t, framework.CCMOptions{CloudConfig: cfg})
	registerNode(t, "gone-x", true, "198.18.3.10")
	registerNode(t, "gone-y", true, "198.18.3.11")
	registerNode(t, "gone-z", true, "198.18.3.12") // discovered
	for _, n := range []string{"gone-x", "gone-y", "gone-z"} {
		waitInitialized(t, n, 30*time.Second)
	}
	// Every node goes NotReady: only the one whose machine leaves the
	// inventory may be deleted.
	for _, n := range []string{"gone-x", "gone-y", "gone-z"} {
		if err := framework.SetNodeReady(context.Background(), client, n, false); err != nil {
			t.Fatal(err)
		}
	}
	// While the machines are all in the inventory, NotReady deletes nothing.
	time.Sleep(3 * time.Second)
	for _, n := range []string{"gone-x", "gone-y", "gone-z"} {
		if _, err := client.CoreV1().Nodes().Get(context.Background(), n, metav1.GetOptions{}); err != nil {
			t.Fatalf("node %s disappeared while its machine was known: %v", n, err)
		}
	}
	ccm.Stop(5 * time.Second)
	if err := os.WriteFile(cfg, []byte("apiVersion: metal-ccm.io/v1alpha1\nkind: CloudConfig\nnodes:\n  inventory:\n  - {name: gone-y}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	startCCM(t, framework.CCMOptions{Name: "ccm-gone-2", CloudConfig: cfg})
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Nodes().Get(ctx, "gone-x", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("node gone-x, removed from the inventory and NotReady, was not deleted: %v", err)
	}
	for _, n := range []string{"gone-y", "gone-z"} {
		if _, err := client.CoreV1().Nodes().Get(context.Background(), n, metav1.GetOptions{}); err != nil {
			t.Errorf("node %s was deleted, but its machine is not gone: %v", n, err)
		}
	}
}

func TestDiscoveryRejectLeavesNodeTaintedWithEvent(t *testing.T) {
	cfg := writeConfig(t, `nodes:
  discovery: {policy: Reject}
  inventory:
  - {name: reject-known}
`)
	startCCM(t, framework.CCMOptions{CloudConfig: cfg})
	registerNode(t, "reject-unknown", true, "198.18.4.11")
	registerNode(t, "reject-known", true, "198.18.4.10")
	waitInitialized(t, "reject-known", 30*time.Second)

	var ev *v1.Event
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, e := range nodeEvents(ctx, t, "reject-unknown") {
			if e.Reason == "DiscoveryRejected" {
				ev = &e
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no DiscoveryRejected Event on node reject-unknown: %v", err)
	}
	if ev.Type != v1.EventTypeWarning {
		t.Errorf("event type = %s, want Warning", ev.Type)
	}
	n, err := client.CoreV1().Nodes().Get(context.Background(), "reject-unknown", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !framework.Uninitialized(n) || n.Spec.ProviderID != "" {
		t.Errorf("rejected node was initialized: taints %v, providerID %q", n.Spec.Taints, n.Spec.ProviderID)
	}
}
