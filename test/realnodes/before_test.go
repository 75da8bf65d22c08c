package realnodes

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/images"
)

// beforeEnv runs TestPowerOffWithoutSource: it waits more than 5 minutes
// on purpose, so it is not part of make test.
const beforeEnv = "METAL_CCM_POWER_BEFORE"

// beforeWindow is how long the pod is watched after the power-off: past
// the 300 s of the not-ready and unreachable tolerations Kubernetes gives
// every pod, after which the pod is evicted (deleted) and, its kubelet
// gone, stays Terminating.
const beforeWindow = 330 * time.Second

// TestPowerOffWithoutSource is the "before" of TestPowerOffThroughBMC: the
// same three real nodes with real BMCs and a one-replica StatefulSet, but a
// CCM with no power-state source. Powered off through its BMC, X turns
// NotReady and nothing else happens that frees the pod: after 5 minutes it
// is still on X (Terminating once evicted), and no pod of the StatefulSet
// runs anywhere else. Run it with METAL_CCM_POWER_BEFORE=1 (about 7 minutes).
func TestPowerOffWithoutSource(t *testing.T) {
	if os.Getenv(beforeEnv) == "" {
		t.Skipf("set %s=1 to run it (it waits %s on purpose)", beforeEnv, beforeWindow)
	}
	if err := framework.BMCAvailable(); err != nil {
		t.Skip(err)
	}
	bm := startBMCMachines(t, "before")
	nodes, bmcs := bm.nodes, bm.bmcs
	ctx := context.Background()
	var inventory strings.Builder
	for _, n := range nodes {
		fmt.Fprintf(&inventory, "  - name: %s\n", n.Name)
	}
	cfg := writeConfig(t, fmt.Sprintf(`apiVersion: metal-ccm.io/v1alpha1
kind: CloudConfig
nodes:
  inventory:
%s`, inventory.String()))
	cp.StartCCMForTest(t, framework.CCMOptions{Name: "ccm-before", CloudConfig: cfg, Args: []string{
		"--leader-elect-resource-name", "before", "--allocate-node-cidrs=false", "--configure-cloud-routes=false",
		"--node-monitor-period", "1s",
	}})
	ns := framework.NewNamespace(t, client, framework.NamespaceName(t))
	defaultServiceAccount(t, ns)
	t.Cleanup(func() { deletePods(ns) })
	for _, n := range nodes {
		waitNode(t, n.Name, time.Minute, func(node *v1.Node) bool {
			return !framework.Uninitialized(node) && nodeReady(node) && !hasTaint(node, v1.TaintNodeNotReady)
		})
	}

	framework.CreateStatefulSet(t, client, ns, "db", images.Ref("echo"))
	const pod = "db-0"
	x := framework.WaitRunning(t, client, ns, pod, 2*time.Minute)
	t.Logf("pod %s runs on %s; powering %s off through its BMC, no power-state source", pod, x, x)

	off := time.Now()
	bmcs[x].Power(t, false)
	f, err := framework.WatchPowerOff(ctx, client, ns, pod, x, off, beforeWindow)
	if err == nil {
		t.Fatalf("pod %s Running on %s %.1fs after %s was powered off, with no power-state source", pod, f.MovedTo, f.Moved.Seconds(), x)
	}
	p, err := client.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("pod %s after %s: %v", pod, beforeWindow, err)
	}
	state := "not Terminating"
	if p.DeletionTimestamp != nil {
		// The deletion timestamp is the eviction plus the pod's grace period.
		var grace time.Duration
		if p.DeletionGracePeriodSeconds != nil {
			grace = time.Duration(*p.DeletionGracePeriodSeconds) * time.Second
		}
		state = fmt.Sprintf("Terminating: evicted %.1fs after the power-off", p.DeletionTimestamp.Add(-grace).Sub(off).Seconds())
	}
	t.Logf("%.0fs after the power-off of %s: NotReady after %.1fs, pod %s still on %s (%s), no pod of the StatefulSet elsewhere",
		time.Since(off).Seconds(), x, f.NotReady.Seconds(), pod, p.Spec.NodeName, state)
	if p.Spec.NodeName != x {
		t.Errorf("pod %s on %s, want still on %s", pod, p.Spec.NodeName, x)
	}
}
