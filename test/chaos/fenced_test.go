package chaos

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metal-ccm/metal-ccm/pkg/fencing"
	"github.com/metal-ccm/metal-ccm/test/framework"
)

// The row of fencing, on the BMC lab.
const fencedFault = "kubelet frozen, machine On: fenced through its BMC, StatefulSet pod back on another node"

const (
	// fenceAfter is fencing.after in the BMC lab: how long a node is
	// NotReady before the leader powers its machine off.
	fenceAfter = 10 * time.Second
	// fencedGoal is issue 31's goal for a frozen kubelet's pod back
	// elsewhere; the test fails past bmcMoveBound.
	fencedGoal = 120 * time.Second
)

// fenced freezes, n times, the kubelet of the StatefulSet pod's node while
// its machine stays On (its BMC says so): the node turns NotReady, the
// leader powers the machine off through its BMC fencing.after later, the
// out-of-service rule follows once the BMC says Off, and the pod runs on
// another node. Per fault: the freeze to the pod Running elsewhere, the
// machine off as ipmitool reads it, no power taint on the nodes that stay
// on; then the machine powered on through its BMC (which resumes the
// kubelet) until the node is Ready and untainted.
func (bl *bmcLab) fenced(t *testing.T, res result, n int) result {
	ctx := context.Background()
	var notReady, fencedAt, tainted []time.Duration
	var wrong []string
	for range n {
		x := framework.WaitRunning(t, bl.client, bl.ns, bmcPod, 2*time.Minute)
		kubelet := bl.machines[x].Node.Kubelet
		frozen := time.Now()
		err := kubelet.Freeze(true)
		var f framework.PowerOffFigures
		if err == nil {
			f, err = framework.WatchPowerOff(ctx, bl.client, bl.ns, bmcPod, x, frozen, bmcMoveBound)
			wrong = append(wrong, f.WrongTaints...)
		}
		if err == nil {
			err = bl.checkFenced(x, frozen, &fencedAt)
		}
		res.tally(f.Moved, err)
		if err != nil {
			t.Errorf("%s: %v", fencedFault, err)
			_ = kubelet.Freeze(false)
			return res
		}
		notReady, tainted = append(notReady, f.NotReady), append(tainted, f.Tainted)
		t.Logf("%s: %s's kubelet frozen: NotReady after %s, fenced after %s, out-of-service after %s, pod %s Running on %s after %s",
			fencedFault, x, f.NotReady.Round(100*time.Millisecond), fencedAt[len(fencedAt)-1], f.Tainted.Round(100*time.Millisecond),
			bmcPod, f.MovedTo, f.Moved.Round(100*time.Millisecond))
		on := time.Now()
		if err := bl.bmcs[x].SetPower(true); err != nil {
			t.Fatal(err)
		}
		if _, _, err := framework.WaitPowerBack(ctx, bl.client, x, on, 2*time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	res.pass = res.injected > 0 && res.survived == res.injected && len(wrong) == 0 && median(res.recovery) <= fencedGoal
	res.note = fmt.Sprintf("recovery: the kubelet's freeze to the pod Running and Ready on another node (goal %s; grace period %s, fencing.after %s, confirmFor %s); NotReady after %s, fenced after %s, out-of-service taint after %s; wrong taints (nodes that stayed on): %d",
		fencedGoal, framework.NodeMonitorGracePeriod, fenceAfter, bmcConfirmFor, medianMax(notReady), medianMax(fencedAt), medianMax(tainted), len(wrong))
	return res
}

// checkFenced checks that node x was fenced since frozen (an Event
// Fenced) and that its BMC says its machine is off, and appends when.
func (bl *bmcLab) checkFenced(x string, frozen time.Time, at *[]time.Duration) error {
	evs, err := bl.client.CoreV1().Events(metav1.NamespaceAll).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + x})
	if err != nil {
		return err
	}
	since := frozen.Truncate(time.Second)
	for _, e := range evs.Items {
		if e.Reason == fencing.ReasonFenced && !e.LastTimestamp.Time.Before(since) {
			*at = append(*at, e.LastTimestamp.Sub(frozen).Round(time.Second))
			on, err := bl.bmcs[x].PoweredOn()
			if err != nil {
				return fmt.Errorf("%s fenced: %w", x, err)
			}
			if on {
				return fmt.Errorf("%s fenced, its BMC still says power on", x)
			}
			return nil
		}
	}
	return fmt.Errorf("the pod moved from %s without a Fenced Event since the freeze", x)
}
