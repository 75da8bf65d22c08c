package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/metal-ccm/metal-ccm/pkg/metal"
	"github.com/metal-ccm/metal-ccm/pkg/outofservice"
	"github.com/metal-ccm/metal-ccm/test/framework"
)

// shutdownTaint is the taint upstream's cloud node lifecycle controller puts
// on a NotReady node that the provider says is shut down.
const shutdownTaint = "node.cloudprovider.kubernetes.io/shutdown"

// TestBMCPowerOffMarksTheNodeShutDown runs the whole chain with a real BMC
// (ipmi_sim): two NotReady nodes whose machines have BMCs, one reached with
// its credentials, one with a wrong password, and the out-of-service taint
// on. Powered off through its BMC by an independent client (ipmitool), the
// first gets the shutdown taint, a PoweredOff Event and, after confirmFor,
// the out-of-service taint; the second, whose BMC cannot be asked, only a
// PowerStateUnknown Event and neither taint, though its machine is off too.
// Ready again, the first loses the out-of-service taint; a node tainted by
// hand keeps it.
func TestBMCPowerOffMarksTheNodeShutDown(t *testing.T) {
	good := framework.StartBMC(t, "pw-good", "exec sleep 100000")
	refused := framework.StartBMC(t, "pw-refused", "exec sleep 100000")
	cfg := writeConfig(t, fmt.Sprintf(`nodes:
  powerState: {source: ipmi, settings: {timeout: 2s, cacheAge: 1s}, outOfService: {enabled: true, confirmFor: 2s}}
  inventory:
  - name: pw-good
    addresses: [{type: InternalIP, address: 198.18.3.10}]
    powerState: {address: %q, usernameFile: %q, passwordFile: %q}
  - name: pw-refused
    addresses: [{type: InternalIP, address: 198.18.3.11}]
    powerState: {address: %q, usernameFile: %q, passwordFile: %q}
  - name: pw-hand
    addresses: [{type: InternalIP, address: 198.18.3.12}]
`, good.Addr, good.UserFile, good.PasswordFile, refused.Addr, refused.UserFile, good.PasswordFile))
	startCCM(t, framework.CCMOptions{CloudConfig: cfg})
	registerNode(t, "pw-good", false, "198.18.3.10")
	registerNode(t, "pw-refused", false, "198.18.3.11")
	registerNode(t, "pw-hand", false, "198.18.3.12")
	for _, n := range []string{"pw-good", "pw-refused", "pw-hand"} {
		waitInitialized(t, n, 30*time.Second)
	}
	// An operator's own out-of-service taint, which the CCM must leave.
	byHand, err := client.CoreV1().Nodes().Get(t.Context(), "pw-hand", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byHand.Spec.Taints = append(byHand.Spec.Taints, v1.Taint{Key: outofservice.TaintKey, Value: "nodeshutdown", Effect: v1.TaintEffectNoExecute})
	if _, err := client.CoreV1().Nodes().Update(t.Context(), byHand, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	refused.Power(t, false)
	good.Power(t, false)
	waitNodeTaint(t, "pw-good", shutdownTaint, 30*time.Second)
	framework.WaitObjectEvent(t, client, metav1.NamespaceAll, "pw-good", metal.ReasonPoweredOff, 10*time.Second)
	waitNodeTaint(t, "pw-good", outofservice.TaintKey, 30*time.Second)
	framework.WaitObjectEvent(t, client, metav1.NamespaceAll, "pw-good", outofservice.ReasonTainted, 10*time.Second)
	framework.WaitObjectEvent(t, client, metav1.NamespaceAll, "pw-refused", metal.ReasonPowerStateUnknown, 10*time.Second)
	n, err := client.CoreV1().Nodes().Get(t.Context(), "pw-refused", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(n.Spec.Taints, func(tt v1.Taint) bool { return tt.Key == shutdownTaint || tt.Key == outofservice.TaintKey }) {
		t.Errorf("node pw-refused, whose BMC refused the credentials, got a taint: %v", n.Spec.Taints)
	}

	// Back: powered on and Ready, the CCM's own taint goes; the
	// operator's stays.
	good.Power(t, true)
	for _, name := range []string{"pw-good", "pw-hand"} {
		if err := framework.SetNodeReady(t.Context(), client, name, true); err != nil {
			t.Fatal(err)
		}
	}
	framework.WaitObjectEvent(t, client, metav1.NamespaceAll, "pw-good", outofservice.ReasonUntainted, 30*time.Second)
	for name, want := range map[string]bool{"pw-good": false, "pw-hand": true} {
		n, err := client.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := slices.ContainsFunc(n.Spec.Taints, func(tt v1.Taint) bool { return tt.Key == outofservice.TaintKey }); got != want {
			t.Errorf("node %s, Ready again: out-of-service taint %v, want %v (taints %v)", name, got, want, n.Spec.Taints)
		}
	}
}

// waitNodeTaint waits until the node has a taint of that key.
func waitNodeTaint(t *testing.T, name, key string, timeout time.Duration) {
	t.Helper()
	var last []v1.Taint
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // keep polling through transient errors
		}
		last = n.Spec.Taints
		return slices.ContainsFunc(n.Spec.Taints, func(tt v1.Taint) bool { return tt.Key == key }), nil
	})
	if err != nil {
		t.Fatalf("node %s has no taint %s within %s (taints: %v)", name, key, timeout, last)
	}
}
