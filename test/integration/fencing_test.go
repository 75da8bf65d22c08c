package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metal-ccm/metal-ccm/pkg/annotation"
	"github.com/metal-ccm/metal-ccm/pkg/fencing"
	"github.com/metal-ccm/metal-ccm/pkg/outofservice"
	"github.com/metal-ccm/metal-ccm/test/framework"
)

// fencingConfig is a cloud config with ipmi, out-of-service and fencing
// (after 3s, with fencingExtra), whose machines are the BMCs by node name.
func fencingConfig(t *testing.T, fencingExtra string, bmcs map[string]*framework.BMC, names ...string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, `nodes:
  powerState:
    source: ipmi
    settings: {timeout: 2s, cacheAge: 1s}
    outOfService: {enabled: true, confirmFor: 1s}
    fencing: {enabled: true, after: 3s%s}
  inventory:
`, fencingExtra)
	for i, n := range names {
		bmc := bmcs[n]
		fmt.Fprintf(&b, "  - name: %s\n    addresses: [{type: InternalIP, address: 198.18.3.%d}]\n    powerState: {address: %q, usernameFile: %q, passwordFile: %q}\n",
			n, 40+i, bmc.Addr, bmc.UserFile, bmc.PasswordFile)
	}
	return writeConfig(t, b.String())
}

// startFencingNodes starts a BMC per name, the CCM, and registers each node
// (Ready as ready says), initialized.
func startFencingNodes(t *testing.T, fencingExtra string, ready map[string]bool, names ...string) map[string]*framework.BMC {
	t.Helper()
	bmcs := map[string]*framework.BMC{}
	for _, n := range names {
		bmcs[n] = framework.StartBMC(t, n, "exec sleep 100000")
	}
	startCCM(t, framework.CCMOptions{CloudConfig: fencingConfig(t, fencingExtra, bmcs, names...)})
	for i, n := range names {
		registerNode(t, n, ready[n], fmt.Sprintf("198.18.3.%d", 40+i))
	}
	for _, n := range names {
		waitInitialized(t, n, 30*time.Second)
	}
	return bmcs
}

// chassisOn is the BMC's power as an independent client (ipmitool) reads it.
func chassisOn(t *testing.T, b *framework.BMC) bool {
	t.Helper()
	on, err := b.PoweredOn()
	if err != nil {
		t.Fatal(err)
	}
	return on
}

// waitChassisOff waits until ipmitool says the BMC's power is off.
func waitChassisOff(t *testing.T, b *framework.BMC, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for chassisOn(t, b) {
		if time.Now().After(deadline) {
			t.Fatalf("the BMC at %s still says power on after %s", b.Addr, timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// hasReason says whether an Event of that reason was recorded on the node.
func hasReason(t *testing.T, name, reason string) bool {
	t.Helper()
	for _, e := range nodeEvents(t.Context(), t, name) {
		if e.Reason == reason {
			return true
		}
	}
	return false
}

// TestFencingPowersOffAHungNode: a NotReady node whose BMC (ipmi_sim) says
// On is powered off through it after fencing.after (ipmitool sees it off),
// gets Fenced, its mark, then the out-of-service taint once the BMC says
// Off; a node NotReady for less than after, Ready again, is never fenced.
// maxNodes 2, so that the two NotReady nodes do not hold each other.
func TestFencingPowersOffAHungNode(t *testing.T) {
	bmcs := startFencingNodes(t, ", maxNodes: 2", map[string]bool{"fence-hung": false, "fence-back": true}, "fence-hung", "fence-back")
	// fence-back goes NotReady for a second, less than after.
	if err := framework.SetNodeReady(t.Context(), client, "fence-back", false); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if err := framework.SetNodeReady(t.Context(), client, "fence-back", true); err != nil {
		t.Fatal(err)
	}

	framework.WaitObjectEvent(t, client, metav1.NamespaceAll, "fence-hung", fencing.ReasonFenced, 30*time.Second)
	waitChassisOff(t, bmcs["fence-hung"], 15*time.Second)
	n, err := client.CoreV1().Nodes().Get(t.Context(), "fence-hung", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := n.Annotations[annotation.Fenced]; !ok {
		t.Errorf("fenced node without the %s mark: %v", annotation.Fenced, n.Annotations)
	}
	waitNodeTaint(t, "fence-hung", outofservice.TaintKey, 30*time.Second)
	framework.WaitObjectEvent(t, client, metav1.NamespaceAll, "fence-hung", outofservice.ReasonTainted, 10*time.Second)

	if !chassisOn(t, bmcs["fence-back"]) {
		t.Error("fence-back, NotReady for less than after, was powered off")
	}
	if hasReason(t, "fence-back", fencing.ReasonFenced) {
		t.Error("fence-back, NotReady for less than after, was fenced")
	}

	// Ready again: the mark goes (and the out-of-service taint).
	bmcs["fence-hung"].Power(t, true)
	if err := framework.SetNodeReady(t.Context(), client, "fence-hung", true); err != nil {
		t.Fatal(err)
	}
	framework.WaitObjectEvent(t, client, metav1.NamespaceAll, "fence-hung", outofservice.ReasonUntainted, 30*time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, err := client.CoreV1().Nodes().Get(t.Context(), "fence-hung", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := n.Annotations[annotation.Fenced]; !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Ready again, fence-hung keeps the %s mark", annotation.Fenced)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestFencingOneAtATime: two NotReady nodes whose BMCs say On, with
// maxNodes 1: exactly one is fenced (powered off, as ipmitool sees it), the
// other gets FencingHeld and its BMC stays On; once the fenced one is
// Ready again, the other is fenced.
func TestFencingOneAtATime(t *testing.T) {
	names := []string{"fence-one-a", "fence-one-b"}
	bmcs := startFencingNodes(t, ", maxNodes: 1", nil, names...)
	var fenced, held string
	deadline := time.Now().Add(30 * time.Second)
	for fenced == "" || held == "" {
		if time.Now().After(deadline) {
			t.Fatalf("not one fenced and one held within 30s: fenced %q, held %q", fenced, held)
		}
		for i, n := range names {
			if hasReason(t, n, fencing.ReasonFenced) {
				fenced, held = n, names[1-i]
			}
		}
		if fenced != "" && !hasReason(t, held, fencing.ReasonHeld) {
			held = ""
		}
		time.Sleep(200 * time.Millisecond)
	}
	waitChassisOff(t, bmcs[fenced], 15*time.Second)
	time.Sleep(4 * time.Second) // rounds of the leader past after, one fenced
	if !chassisOn(t, bmcs[held]) {
		t.Errorf("%s was powered off while %s, fenced, is not Ready again", held, fenced)
	}
	if hasReason(t, held, fencing.ReasonFenced) {
		t.Errorf("%s was fenced while %s, fenced, is not Ready again", held, fenced)
	}
	bmcs[fenced].Power(t, true)
	if err := framework.SetNodeReady(t.Context(), client, fenced, true); err != nil {
		t.Fatal(err)
	}
	framework.WaitObjectEvent(t, client, metav1.NamespaceAll, held, fencing.ReasonFenced, 30*time.Second)
	waitChassisOff(t, bmcs[held], 15*time.Second)
	if !chassisOn(t, bmcs[fenced]) {
		t.Errorf("%s, Ready again, was powered off again", fenced)
	}
}

// TestFencingDryRun: with dryRun a NotReady node whose BMC says On gets
// WouldFence, and its BMC stays On.
func TestFencingDryRun(t *testing.T) {
	bmcs := startFencingNodes(t, ", dryRun: true", nil, "fence-dry")
	framework.WaitObjectEvent(t, client, metav1.NamespaceAll, "fence-dry", fencing.ReasonWouldFence, 30*time.Second)
	time.Sleep(3 * time.Second) // more rounds of the leader
	if !chassisOn(t, bmcs["fence-dry"]) {
		t.Error("dry run: the machine was powered off")
	}
	if hasReason(t, "fence-dry", fencing.ReasonFenced) {
		t.Error("dry run: Fenced")
	}
}
