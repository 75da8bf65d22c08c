package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metal-ccm/metal-ccm/pkg/metal"
	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/images"
)

// The rows of the power-off through a BMC.
const (
	bmcPowerOffFault    = "machine powered off through its BMC (ipmitool chassis power off), StatefulSet pod back on another node"
	bmcUnreachableFault = "BMC unreachable while its node is NotReady (machine off, BMC frozen)"
)

const (
	// bmcMoveGoal is issue 31's goal for the pod back elsewhere through
	// the grace period's path (no fast path); the test fails a fault only
	// past bmcMoveBound, as a shared test machine may be slow, and the
	// table shows the figures.
	bmcMoveGoal  = 60 * time.Second
	bmcMoveBound = 3 * time.Minute
	// bmcConfirmFor is the CCM's out-of-service confirmation here.
	bmcConfirmFor = 5 * time.Second
	// bmcTimeout is the ipmi source's timeout of one question.
	bmcTimeout = 2 * time.Second
	// bmcPod is the StatefulSet's pod.
	bmcPod = "db-0"
	// bmcPool4 and bmcPool6 are the pool of the fast path's Service: apart
	// from the other chaos pools.
	bmcPool4, bmcPool6 = "198.18.73.0/24", "2001:db8:73::/120"
)

// bmcLab is what the BMC rows run on: the power lab's nodes, each a
// machine with a real IPMI BMC (ipmi_sim) whose chassis power is its
// node's, a CCM with the ipmi source and the out-of-service taint on, and
// a one-replica StatefulSet.
type bmcLab struct {
	*powerLab
	machines map[string]*framework.Machine
	bmcs     map[string]*framework.BMC
	// ccm is the lab's replica; cfg its cloud-config, whose
	// outOfService section outOfService writes (a reload).
	ccm       *framework.CCM
	cfgPath   string
	inventory string
}

// TestChaosBMCPowerOff powers the machine of the StatefulSet pod's node
// off through its BMC, as an operator or a power failure would, with the
// CCM asking the BMCs (source ipmi) and tainting a powered-off NotReady
// node out of service: per fault, the time from the power-off to the pod
// Running and Ready on another node (through the node-monitor grace
// period: the fast path off), no shutdown or out-of-service taint
// on the nodes that stay on, and after the power-on the node Ready and its
// taint removed. Then the evidence rule under a fault: a machine powered
// off whose BMC then stops answering (frozen) is NotReady, yet gets no
// taint at all for a window, as a BMC that does not answer says nothing
// about its machine. Then the same lab with the out-of-service fast path
// on (a reload): kube-proxy frozen on machines that stay on gets no taint,
// and a power-off under a request loop to a Cluster Service with a pod on
// every node gives how long requests failed and how soon the pod ran
// elsewhere. Fencing is on all along (a machine its BMC says is Off, or
// whose BMC does not answer, is never fenced); last, a frozen kubelet on
// a machine that stays On is fenced through its BMC (fenced_test.go). The
// full profile ends with the first rows' power-offs under Kubernetes'
// own node monitoring (bmcdefaultgrace_test.go).
func TestChaosBMCPowerOff(t *testing.T) {
	rows := []string{bmcPowerOffFault, bmcUnreachableFault, fastServiceFault, fastMoveFault, fencedFault}
	if prof.bmcDefaultGrace > 0 {
		rows = append(rows, bmcDefaultGraceFault)
	}
	needLabOrRecord(t, rows...)
	if err := errors.Join(framework.RealNodesAvailable(), framework.BMCAvailable()); err != nil {
		for _, f := range rows {
			record(result{fault: f, requests: -1, duplicates: -1, changed: -1, skipped: err.Error()})
		}
		t.Skipf("skipping: %v", err)
	}
	bl := startBMCLab(t)
	const scale = "3 real nodes, each with an ipmi_sim BMC; one-replica StatefulSet"
	record(bl.powerOffs(t, result{fault: bmcPowerOffFault, scale: scale, requests: -1, duplicates: -1, changed: -1}, prof.bmcPowerOffs,
		labMonitor))
	if t.Failed() {
		return
	}
	record(bl.unreachable(t, result{fault: bmcUnreachableFault, scale: scale, requests: -1, duplicates: -1, changed: -1}, prof.bmcUnreachable))
	if t.Failed() {
		return
	}
	const fastScale = "3 real nodes, each with an ipmi_sim BMC; Cluster Service with a pod on each; one-replica StatefulSet"
	svc, move := bl.fastPath(t, result{fault: fastServiceFault, scale: fastScale, duplicates: -1, changed: -1},
		result{fault: fastMoveFault, scale: fastScale, requests: -1, duplicates: -1, changed: -1}, prof.bmcPowerOffs)
	record(svc)
	record(move)
	if t.Failed() {
		return
	}
	record(bl.fenced(t, result{fault: fencedFault, scale: "3 real nodes, each with an ipmi_sim BMC; one-replica StatefulSet; fencing after 10s, maxNodes 1", requests: -1, duplicates: -1, changed: -1}, prof.bmcPowerOffs))
	if prof.bmcDefaultGrace == 0 || t.Failed() {
		return
	}
	record(bl.defaultGrace(t, result{fault: bmcDefaultGraceFault, scale: scale, requests: -1, duplicates: -1, changed: -1}, prof.bmcDefaultGrace))
}

// startBMCLab starts the power lab, the machines and their BMCs, the CCM
// and the StatefulSet, and waits for its pod.
func startBMCLab(t *testing.T) *bmcLab {
	t.Helper()
	bl := &bmcLab{powerLab: startPowerLab(t), machines: map[string]*framework.Machine{}, bmcs: map[string]*framework.BMC{}}
	var inventory strings.Builder
	for i, n := range bl.nodes {
		m := framework.NewMachine(n, func(up bool) error { return lab.SetNodeLink(i, up) })
		b := m.AttachBMC(t)
		bl.machines[n.Name], bl.bmcs[n.Name] = m, b
		fmt.Fprintf(&inventory, "  - name: %s\n    powerState: {address: %q, usernameFile: %q, passwordFile: %q}\n",
			n.Name, b.Addr, b.UserFile, b.PasswordFile)
	}
	bl.inventory = inventory.String()
	bl.cfgPath = filepath.Join(bl.cp.Dir, "ccm-bmcpower.yaml")
	if err := bl.writeConfig(false, bmcConfirmFor, false); err != nil {
		t.Fatal(err)
	}
	// The LoadBalancer pool, BGP, pod routes and the node health checks
	// are for the fast path's rows (a Cluster Service under a request
	// loop); the rows before them run without the fast path.
	bl.ccm = bl.cp.StartCCMForTest(t, framework.CCMOptions{Name: "ccm-bmcpower", CloudConfig: bl.cfgPath, HealthChecks: true,
		Args: powerCCMArgs("bmcpower")})
	for _, n := range bl.nodes {
		framework.WaitNode(t, bl.client, n.Name, time.Minute, func(node *v1.Node) bool {
			return !framework.Uninitialized(node) && nodeReady(node) && !slices.ContainsFunc(node.Spec.Taints,
				func(t v1.Taint) bool { return t.Key == v1.TaintNodeNotReady })
		})
	}
	bl.ns = framework.NewNamespace(t, bl.client, "chaos-bmcpower")
	if _, err := bl.client.CoreV1().ServiceAccounts(bl.ns).Create(context.Background(),
		&v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	framework.CreateStatefulSet(t, bl.client, bl.ns, "db", images.Ref("echo"))
	return bl
}

// writeConfig writes the lab's cloud-config, with the out-of-service fast
// path and the leader's deletion of the pods on or off and confirmFor, by
// a rename, as a ConfigMap update swaps the file at once.
func (bl *bmcLab) writeConfig(fastPath bool, confirmFor time.Duration, deletePods bool) error {
	cfg := powerCCMConfig(bmcPool4, bmcPool6, true) + fmt.Sprintf(`nodes:
  powerState:
    source: ipmi
    settings: {timeout: %s, cacheAge: 1s}
    outOfService: {enabled: true, confirmFor: %s, fastPath: %t, deletePods: %t}
    fencing: {enabled: true, after: %s, maxNodes: 1}
  inventory:
%s`, bmcTimeout, confirmFor, fastPath, deletePods, fenceAfter, bl.inventory)
	tmp := bl.cfgPath + ".tmp"
	if err := os.WriteFile(tmp, []byte(cfg), 0o600); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	if err := os.Rename(tmp, bl.cfgPath); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	return nil
}

// monitor is how the power-offs' pod moves: the node-lifecycle
// controller's grace period, the CCM's confirmFor and whether the leader
// deletes the pods.
type monitor struct {
	grace, confirmFor time.Duration
	deletePods        bool
	note              string
}

// labMonitor is the lab's: a short grace period, the pods left to
// Kubernetes' pod garbage collector.
var labMonitor = monitor{grace: framework.NodeMonitorGracePeriod, confirmFor: bmcConfirmFor,
	note: "40-50s with Kubernetes' defaults"}

// powerOffs powers the pod's node off through its BMC n times (the pod
// then runs on another node, which the next fault powers off), each time
// until the pod runs elsewhere, then on again until the node is Ready and
// untainted.
func (bl *bmcLab) powerOffs(t *testing.T, res result, n int, m monitor) result {
	ctx := context.Background()
	var notReady, tainted, back []time.Duration
	var wrong []string
	for k := range n {
		x := framework.WaitRunning(t, bl.client, bl.ns, bmcPod, 2*time.Minute)
		b := bl.bmcs[x]
		off := time.Now()
		err := b.SetPower(false)
		var f framework.PowerOffFigures
		if err == nil {
			f, err = framework.WatchPowerOff(ctx, bl.client, bl.ns, bmcPod, x, off, bmcMoveBound)
			wrong = append(wrong, f.WrongTaints...)
			if err == nil && f.Tainted == 0 {
				err = fmt.Errorf("the pod moved from %s without its out-of-service taint", x)
			}
		}
		res.tally(f.Moved, err)
		if err == nil {
			notReady, tainted = append(notReady, f.NotReady), append(tainted, f.Tainted)
		}
		on := time.Now()
		var ready, untainted time.Duration
		perr := b.SetPower(true)
		if perr == nil {
			ready, untainted, perr = framework.WaitPowerBack(ctx, bl.client, x, on, 2*time.Minute)
		}
		if err != nil || perr != nil {
			t.Errorf("power-off %d of %d (%s): %v", k+1, n, x, errors.Join(err, perr))
			if perr != nil {
				break // the node is not back: the next fault would measure nothing
			}
			continue
		}
		back = append(back, untainted)
		t.Logf("power-off %d of %d through %s's BMC: NotReady after %.1fs, out-of-service after %.1fs, pod %s Running on %s after %.1fs; powered on: Ready after %.1fs, taint removed after %.1fs",
			k+1, n, x, f.NotReady.Seconds(), f.Tainted.Seconds(), bmcPod, f.MovedTo, f.Moved.Seconds(), ready.Seconds(), untainted.Seconds())
	}
	res.note = fmt.Sprintf("recovery: ipmitool chassis power off to the pod Running and Ready on another node (goal %s; grace period %s, %s; confirmFor %s, deletePods %t); NotReady after %s, out-of-service taint after %s; wrong taints (nodes that stayed on): %d; power-on to Ready and the taint removed %s",
		bmcMoveGoal, m.grace, m.note, m.confirmFor, m.deletePods, medianMax(notReady), medianMax(tainted), len(wrong), medianMax(back))
	if len(wrong) > 0 {
		t.Errorf("taints on nodes that stayed on: %v", wrong)
	}
	res.pass = res.survived == res.injected && len(wrong) == 0
	return res
}

// bmcWindow is how long a NotReady node whose BMC is frozen is watched for
// taints: many times confirmFor and the source's timeout, so that a
// wrong conclusion would have had every chance.
const bmcWindow = 30 * time.Second

// unreachable powers the pod's node's machine off through its BMC and
// freezes the BMC as soon as the machine is off, while the node is still Ready (nobody asks a
// Ready node's BMC): once the node is NotReady every question to its BMC
// times out, and for bmcWindow no node may get a taint, nor the pod run
// elsewhere. The machine is then powered on directly (its BMC still
// frozen), and the BMC let go once the node is Ready: nothing asks about a
// Ready node, so the BMC's Off in between concludes nothing.
func (bl *bmcLab) unreachable(t *testing.T, res result, n int) result {
	ctx := context.Background()
	var seen []string
	for k := range n {
		x := framework.WaitRunning(t, bl.client, bl.ns, bmcPod, 2*time.Minute)
		b, m := bl.bmcs[x], bl.machines[x]
		// The BMC says off once its machine process has ended; the
		// machine is off once the test has seen that end. Only then is
		// the BMC frozen, so that it cannot be stopped halfway.
		err := b.SetPower(false)
		if err == nil {
			err = waitMachineOff(m, 30*time.Second)
		}
		if err == nil {
			err = b.SetReachable(false)
		}
		if err == nil {
			// The grace period and a margin.
			err = waitNotReady(ctx, bl, x, framework.NodeMonitorGracePeriod+time.Minute)
		}
		var taints []string
		movedTo := ""
		if err == nil {
			taints = framework.WatchNoPowerTaints(ctx, bl.client, "", bmcWindow)
			seen = append(seen, taints...)
			if on := framework.RunningOn(ctx, bl.client, bl.ns, bmcPod); on != "" && on != x {
				movedTo = on
			}
			if !hasEvent(ctx, bl, x, metal.ReasonPowerStateUnknown) {
				err = fmt.Errorf("no %s Event on %s: was its BMC asked?", metal.ReasonPowerStateUnknown, x)
			}
		}
		if err == nil && (len(taints) > 0 || movedTo != "") {
			err = fmt.Errorf("with %s's BMC frozen: taints %v, pod %s on %q", x, taints, bmcPod, movedTo)
		}
		on := time.Now()
		perr := m.PowerOn()
		var ready time.Duration
		if perr == nil {
			ready, _, perr = framework.WaitPowerBack(ctx, bl.client, x, on, 2*time.Minute)
		}
		// Ready: the BMC may answer again, and its machine is switched on
		// through it (the power-on above was the machine's own).
		perr = errors.Join(perr, b.SetReachable(true))
		if perr == nil {
			perr = b.SetPower(true)
		}
		res.tally(ready, errors.Join(err, perr))
		if err != nil || perr != nil {
			t.Errorf("BMC of %s frozen, %d of %d: %v", x, k+1, n, errors.Join(err, perr))
			if perr != nil {
				break
			}
			continue
		}
		t.Logf("BMC of %s frozen while it was NotReady, %d of %d: no taint in %s, pod %s not replaced; powered on: Ready after %.1fs",
			x, k+1, n, bmcWindow, bmcPod, ready.Seconds())
	}
	res.note = fmt.Sprintf("taints on any node during %s of NotReady with the BMC frozen (every question timing out after %s): %d; a PowerStateUnknown Event; the pod not replaced; recovery: the machine's power-on to Ready",
		bmcWindow, bmcTimeout, len(seen))
	res.pass = res.survived == res.injected && len(seen) == 0
	return res
}

// waitMachineOff waits until machine m has lost its power.
func waitMachineOff(m *framework.Machine, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for m.OffSince().IsZero() {
		if time.Now().After(deadline) {
			return fmt.Errorf("machine %s not off %s after its BMC said so", m.Node.Name, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// waitNotReady waits until node name is not Ready.
func waitNotReady(ctx context.Context, bl *bmcLab, name string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if n, err := bl.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err == nil && !nodeReady(n) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %s still Ready %s after its power-off", name, timeout)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// hasEvent reports whether node name has an Event of that reason.
func hasEvent(ctx context.Context, bl *bmcLab, name, reason string) bool {
	l, err := bl.client.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.name=" + name + ",reason=" + reason,
	})
	return err == nil && len(l.Items) > 0
}
