package realnodes

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metal-ccm/metal-ccm/pkg/outofservice"
	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/images"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// bmcConfirmFor is the out-of-service confirmation of the power tests:
// short, so that the figure is mostly Kubernetes' own path (grace period,
// eviction, pod garbage collection, scheduling).
const bmcConfirmFor = 5 * time.Second

// TestPowerOffThroughBMC gives each of three real nodes a real IPMI BMC
// (ipmi_sim) whose chassis power is the node's (framework Machine: power
// off = link down, containerd, kubelet and kube-proxy frozen), and runs the
// CCM with the ipmi source and the out-of-service taint on, as a user
// would. A one-replica StatefulSet's pod runs on node X; X is powered off
// through its BMC by an independent client (ipmitool chassis power off):
// X turns NotReady (the node-monitor grace period), the CCM hears Off from
// the BMC, taints X out of service after confirmFor, and Kubernetes deletes
// the pod, so that the StatefulSet runs it again on another node. Without
// the taint the pod stays Terminating (TestPowerOffWithoutSource: evicted
// after 309 s, and still so at 330 s; docs/node-lifecycle.md). No node that
// stays on gets a shutdown or out-of-service taint. Powered on through its BMC, X is Ready
// again and the CCM removes its taint. Fencing is on all along (a machine
// the BMC says is Off is never fenced); its rows follow on the same lab
// (fencing_test.go).
func TestPowerOffThroughBMC(t *testing.T) {
	if err := framework.BMCAvailable(); err != nil {
		t.Skip(err)
	}
	bm := startBMCMachines(t, "bmc")
	nodes, machines, bmcs := bm.nodes, bm.machines, bm.bmcs
	ctx := context.Background()
	var inventory strings.Builder
	for _, n := range nodes {
		b := bmcs[n.Name]
		fmt.Fprintf(&inventory, "  - name: %s\n    powerState: {address: %q, usernameFile: %q, passwordFile: %q}\n",
			n.Name, b.Addr, b.UserFile, b.PasswordFile)
	}
	cfg := writeConfig(t, fmt.Sprintf(`apiVersion: metal-ccm.io/v1alpha1
kind: CloudConfig
nodes:
  powerState:
    source: ipmi
    settings: {timeout: 2s, cacheAge: 1s}
    outOfService: {enabled: true, confirmFor: %s}
    fencing: {enabled: true, after: %s, maxNodes: 1}
  inventory:
%s`, bmcConfirmFor, fenceAfter, inventory.String()))
	cp.StartCCMForTest(t, framework.CCMOptions{Name: "ccm-bmcpower", CloudConfig: cfg, Args: []string{
		"--leader-elect-resource-name", "bmcpower", "--allocate-node-cidrs=false", "--configure-cloud-routes=false",
		"--node-monitor-period", "1s",
	}})
	ns := framework.NewNamespace(t, client, framework.NamespaceName(t))
	defaultServiceAccount(t, ns)
	// Pods gone from the API before the kubelets stop (cleanups run last
	// first).
	t.Cleanup(func() { deletePods(ns) })
	for _, n := range nodes {
		waitNode(t, n.Name, time.Minute, func(node *v1.Node) bool {
			return !framework.Uninitialized(node) && nodeReady(node) && !hasTaint(node, v1.TaintNodeNotReady)
		})
	}

	framework.CreateStatefulSet(t, client, ns, "db", images.Ref("echo"))
	const pod = "db-0"
	x := framework.WaitRunning(t, client, ns, pod, 2*time.Minute)
	bmc := bmcs[x]
	t.Logf("pod %s runs on %s; powering %s off through its BMC %s", pod, x, x, bmc.Addr)

	off := time.Now()
	bmc.Power(t, false)
	f, err := framework.WatchPowerOff(ctx, client, ns, pod, x, off, 3*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s powered off through its BMC: NotReady after %.1fs, out-of-service after %.1fs, pod %s Running on %s after %.1fs (grace period %s, confirmFor %s)",
		x, f.NotReady.Seconds(), f.Tainted.Seconds(), pod, f.MovedTo, f.Moved.Seconds(), framework.NodeMonitorGracePeriod, bmcConfirmFor)
	if f.Tainted == 0 {
		t.Errorf("the pod moved without the out-of-service taint on %s", x)
	}
	framework.WaitObjectEvent(t, client, metav1.NamespaceAll, x, outofservice.ReasonTainted, 30*time.Second)

	on := time.Now()
	bmc.Power(t, true)
	ready, untainted, err := framework.WaitPowerBack(ctx, client, x, on, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s powered on through its BMC: Ready after %.1fs, out-of-service taint removed after %.1fs", x, ready.Seconds(), untainted.Seconds())
	framework.WaitObjectEvent(t, client, metav1.NamespaceAll, x, outofservice.ReasonUntainted, 30*time.Second)
	// The nodes that stayed on were never tainted, nor is any node now.
	wrong := append(f.WrongTaints, framework.WatchNoPowerTaints(ctx, client, "", 3*time.Second)...)
	if len(wrong) > 0 {
		t.Errorf("wrong taints: %v", wrong)
	}
	if t.Failed() {
		return
	}
	fl := fencingLab{ns: ns, pod: pod, machines: machines, bmcs: bmcs}
	fl.frozenKubelet(t)
	if !t.Failed() {
		fl.twoOfThree(t)
	}
}

// bmcMachines are three real nodes of a lab, NAME0 to NAME2, each a machine
// with a real IPMI BMC (power off: its link down, its daemons frozen).
type bmcMachines struct {
	nodes    []*framework.RealNode
	machines map[string]*framework.Machine
	bmcs     map[string]*framework.BMC
}

// startBMCMachines starts them; the nodes are deleted when the test ends.
func startBMCMachines(t *testing.T, prefix string) *bmcMachines {
	t.Helper()
	// No router work here: one speaker address, no pools, no routes.
	lab := netlab.New(t, netlab.Options{Nodes: 3, Speakers: 1})
	archives, pauseRef := testImages(t)
	bm := &bmcMachines{nodes: make([]*framework.RealNode, len(lab.Nodes)),
		machines: map[string]*framework.Machine{}, bmcs: map[string]*framework.BMC{}}
	for i := range lab.Nodes {
		name := fmt.Sprintf("%s%d", prefix, i)
		t.Cleanup(func() { _ = client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		bm.nodes[i] = cp.StartRealNode(context.Background(), t, framework.RealNodeOptions{
			Name: name, NetNS: lab.Nodes[i], NodeIPs: labNodeIPs(lab, i),
			Images: archives, SandboxImage: pauseRef,
		})
		m := framework.NewMachine(bm.nodes[i], func(up bool) error { return lab.SetNodeLink(i, up) })
		bm.machines[name], bm.bmcs[name] = m, m.AttachBMC(t)
	}
	return bm
}
