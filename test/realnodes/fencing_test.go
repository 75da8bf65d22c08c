package realnodes

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/metal-ccm/metal-ccm/pkg/annotation"
	"github.com/metal-ccm/metal-ccm/pkg/fencing"
	"github.com/metal-ccm/metal-ccm/test/framework"
)

// fenceAfter is fencing.after in the power tests: how long a node is
// NotReady before the leader powers it off.
const fenceAfter = 10 * time.Second

// fencingLab is TestPowerOffThroughBMC's lab, for the fencing rows: the
// StatefulSet's pod, the machines and their BMCs by node name.
type fencingLab struct {
	ns, pod  string
	machines map[string]*framework.Machine
	bmcs     map[string]*framework.BMC
}

// freezeKubelet freezes node's kubelet only (the machine stays On: the BMC
// says so), so that the node turns NotReady with its heartbeat silent: a
// hung machine. Resumed at the end of the test if it still is frozen.
func (l fencingLab) freezeKubelet(t *testing.T, node string) {
	t.Helper()
	k := l.machines[node].Node.Kubelet
	if err := k.Freeze(true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Freeze(false) })
}

// chassisOn is the power of node's machine as ipmitool reads it.
func (l fencingLab) chassisOn(t *testing.T, node string) bool {
	t.Helper()
	on, err := l.bmcs[node].PoweredOn()
	if err != nil {
		t.Fatalf("%s: %v", node, err)
	}
	return on
}

// powerBack powers node's machine on through its BMC (which resumes its
// daemons, the frozen kubelet with them) and waits until it is Ready
// without power taints.
func (l fencingLab) powerBack(t *testing.T, node string) {
	t.Helper()
	on := time.Now()
	l.bmcs[node].Power(t, true)
	ready, untainted, err := framework.WaitPowerBack(context.Background(), client, node, on, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s powered on through its BMC: Ready after %.1fs, taints removed after %.1fs", node, ready.Seconds(), untainted.Seconds())
}

// hasEvent says whether node has an Event of reason last seen at since or
// later (Events count in seconds: since is taken down to its second).
func hasEvent(t *testing.T, node, reason string, since time.Time) bool {
	t.Helper()
	evs, err := client.CoreV1().Events(metav1.NamespaceAll).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + node})
	if err != nil {
		t.Fatal(err)
	}
	since = since.Truncate(time.Second)
	return slices.ContainsFunc(evs.Items, func(e v1.Event) bool { return e.Reason == reason && !e.LastTimestamp.Time.Before(since) })
}

// frozenKubelet is the row "kubelet frozen, fenced": the kubelet of the
// node running the StatefulSet's pod is frozen while its machine stays On;
// the node turns NotReady (the grace period), and after fencing.after the
// leader powers the machine off through its BMC (ipmitool sees it off),
// then the out-of-service rule moves the pod. Goal: the freeze to the pod
// Running elsewhere within 120 s. Powered on again, the node is Ready and
// loses its taint and its fencing mark.
func (l fencingLab) frozenKubelet(t *testing.T) {
	ctx := context.Background()
	x := framework.WaitRunning(t, client, l.ns, l.pod, 2*time.Minute)
	t.Logf("pod %s runs on %s; freezing %s's kubelet, its machine On", l.pod, x, x)
	frozen := time.Now()
	l.freezeKubelet(t, x)
	f, err := framework.WatchPowerOff(ctx, client, l.ns, l.pod, x, frozen, 3*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	fenced := framework.WaitObjectEvent(t, client, metav1.NamespaceAll, x, fencing.ReasonFenced, 30*time.Second)
	t.Logf("%s's kubelet frozen: NotReady after %.1fs, fenced at %s, out-of-service after %.1fs, pod %s Running on %s after %.1fs (goal 120s; grace period %s, fencing.after %s, confirmFor %s)",
		x, f.NotReady.Seconds(), fenced.LastTimestamp.Sub(frozen).Round(time.Second), f.Tainted.Seconds(), l.pod, f.MovedTo, f.Moved.Seconds(),
		framework.NodeMonitorGracePeriod, fenceAfter, bmcConfirmFor)
	if l.chassisOn(t, x) {
		t.Errorf("%s fenced, its BMC still says power on", x)
	}
	if f.Tainted == 0 {
		t.Errorf("the pod moved without the out-of-service taint on %s", x)
	}
	if f.Moved > 120*time.Second {
		t.Errorf("the pod ran elsewhere %s after the kubelet froze; goal 120s", f.Moved.Round(time.Second))
	}
	if len(f.WrongTaints) > 0 {
		t.Errorf("wrong taints: %v", f.WrongTaints)
	}
	l.powerBack(t, x)
	// The fencing controller removes its mark in its next round (every
	// 2 s), which may come after the out-of-service taint is gone (that
	// one goes as soon as the node is Ready).
	var mark string
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		n, err := client.CoreV1().Nodes().Get(ctx, x, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // asked again until the deadline
		}
		v, ok := n.Annotations[annotation.Fenced]
		mark = v
		return !ok, nil
	})
	if err != nil {
		t.Errorf("%s Ready again keeps the fencing mark %s=%s after 10s", x, annotation.Fenced, mark)
	}
}

// twoOfThree is the row "two of three nodes NotReady, maxNodes 1": the
// kubelets of two nodes are frozen, their machines On; exactly one is
// fenced, the other gets FencingHeld and stays On (and untainted) while
// the fenced one is not Ready again.
func (l fencingLab) twoOfThree(t *testing.T) {
	ctx := context.Background()
	var names []string
	for n := range l.machines {
		names = append(names, n)
	}
	slices.Sort(names)
	two := names[:2]
	frozen := time.Now()
	for _, n := range two {
		l.freezeKubelet(t, n)
	}
	var fenced, held string
	deadline := frozen.Add(90 * time.Second)
	for fenced == "" || held == "" {
		if time.Now().After(deadline) {
			t.Fatalf("two kubelets frozen: not one fenced and one held within 90s (fenced %q, held %q)", fenced, held)
		}
		for i, n := range two {
			if hasEvent(t, n, fencing.ReasonFenced, frozen) {
				fenced, held = n, two[1-i]
			}
		}
		if fenced != "" && !hasEvent(t, held, fencing.ReasonHeld, frozen) {
			held = ""
		}
		time.Sleep(time.Second)
	}
	t.Logf("two kubelets frozen: %s fenced, %s held after %.1fs", fenced, held, time.Since(frozen).Seconds())
	// Rounds of the leader with the fenced node not Ready again: the held
	// one stays On and untainted.
	wrong := framework.WatchNoPowerTaints(ctx, client, fenced, 5*time.Second)
	if len(wrong) > 0 {
		t.Errorf("wrong taints with %s held: %v", held, wrong)
	}
	if !l.chassisOn(t, held) {
		t.Errorf("%s was powered off while %s, fenced, is not Ready again (maxNodes 1)", held, fenced)
	}
	if hasEvent(t, held, fencing.ReasonFenced, frozen) {
		t.Errorf("%s was fenced too (maxNodes 1)", held)
	}
	if l.chassisOn(t, fenced) {
		t.Errorf("%s fenced, its BMC still says power on", fenced)
	}
	// Undone: the held node's kubelet resumes before the fenced one comes
	// back, so that it is not fenced in turn.
	if err := l.machines[held].Node.Kubelet.Freeze(false); err != nil {
		t.Fatal(err)
	}
	if _, _, err := framework.WaitPowerBack(ctx, client, held, time.Now(), 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	l.powerBack(t, fenced)
}
