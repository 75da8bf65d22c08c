package chaos

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// l2TwoNodeFault is the row of a two-node L2 cluster: the goal is a
// failover within l2TwoNodeBound, where without the witness the node left
// stays silent until the other is not Ready (40 s by default).
const (
	l2TwoNodeFault = "L2, two nodes: the answering node powered off (its link down, its agent frozen)"
	l2TwoNodeBound = 5 * time.Second
)

// twoNodes runs the two-node row on the L2 cluster: the third real node
// is labelled out of L2 (l2.nodeSelector), so that two agents are
// expected, and holds the one pod of a Service of its own, so that a
// powered-off L2 node takes only its answering away. Each fault powers off
// the node that answers for one of the Service's addresses (its link down
// and its agent frozen), holder of the witness Lease or not, under a
// request loop. The label goes when the row ends.
func twoNodes(t *testing.T, c *netlab.L2Cluster, cs kubernetes.Interface, ns string) result {
	t.Helper()
	res := result{fault: l2TwoNodeFault, duplicates: -1, changed: -1, limit: l2TwoNodeBound,
		scale: "2 real nodes in L2 (the third labelled out by l2.nodeSelector, holding the pod); the witness Lease the third vote; dual-stack Service"}
	const out = 2
	ctx := context.Background()
	setOut := func(on bool) error {
		value := "null"
		if on {
			value = `""`
		}
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%s}}}`, netlab.L2OutLabel, value)
		_, err := cs.CoreV1().Nodes().Patch(ctx, c.RealNodes[out].Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	}
	if err := setOut(true); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := setOut(false); err != nil {
			t.Errorf("node %s back in L2: %v", c.RealNodes[out].Name, err)
		}
	}()
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, echoDeployment("echo2", []string{c.RealNodes[out].Name}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.CreateLoadBalancer(t, cs, ns, "echo2", framework.DualStack, func(s *v1.Service) {
		for i := range s.Spec.Ports {
			s.Spec.Ports[i].TargetPort = intstr.FromInt32(8080)
		}
	})
	waitAppPods(t, cs, ns, "echo2", 1)
	var vips []netip.Addr
	for _, ip := range framework.WaitIngressIPs(t, cs, ns, "echo2", 2, 30*time.Second) {
		vips = append(vips, netip.MustParseAddr(ip))
	}
	two := []int{0, 1}
	for _, vip := range vips {
		c.WaitMAC(t, vip, netlab.L2Owner(vip, two), time.Minute)
		c.WaitAnswers(t, vip)
	}
	leaseNS, leaseName, _ := strings.Cut(framework.L2WitnessLease, "/")
	holder := func() string {
		l, err := cs.CoordinationV1().Leases(leaseNS).Get(ctx, leaseName, metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return holder() != "", nil
	}); err != nil {
		t.Fatalf("nobody holds the witness Lease %s with two agents expected: %v", framework.L2WitnessLease, err)
	}
	held := 0
	// At least two faults, so that both cases are measured: the node
	// powered off holds the witness (the other waits for the Lease), or
	// not (the other holds it and answers at once).
	for i := range max(2, prof.l2Faults) {
		vip := vips[i%len(vips)]
		owner := netlab.L2Owner(vip, two)
		want := c.RealNodes[owner].Name
		if i%2 == 1 {
			want = c.RealNodes[1-owner].Name
		}
		handOver(t, cs, leaseNS, leaseName, want)
		f := l2Fault{c: c, vip: vip, owner: owner, next: 1 - owner, bound: l2TwoNodeBound}
		if holder() == c.RealNodes[owner].Name {
			held++
		}
		f.run(t, &res, func() error { return powerOff(c, owner, true) }, func() error { return powerOff(c, owner, false) }, nil)
		if t.Failed() {
			break
		}
	}
	res.pass = res.injected > 0 && res.survived == res.injected
	res.note = fmt.Sprintf("recovery: the fault to requests succeeding again through the other node (goal: %s; the test fails past %s); the powered-off node held the witness Lease in %d of %d faults",
		l2TwoNodeBound, 2*l2TwoNodeBound, held, res.injected)
	return res
}

// powerOff powers node i off (its link down and its agent frozen) or on:
// unlike the link alone, a powered-off agent renews no Lease, and the
// witness moves only so.
func powerOff(c *netlab.L2Cluster, i int, off bool) error {
	if off {
		if err := c.SetNodeLink(i, false); err != nil {
			return err
		}
		return c.Agents[i].Freeze(true)
	}
	if err := c.Agents[i].Freeze(false); err != nil {
		return err
	}
	return c.SetNodeLink(i, true)
}

// handOver gives the witness Lease to the agent of node as an operator
// would, by writing its holder: the agent that held it sees another holder
// at its next renewal and stops counting the vote, within the witness's
// renew deadline (2 s), which the hand-over waits out; the new holder
// renews it from then on.
func handOver(t *testing.T, cs kubernetes.Interface, ns, name, node string) {
	t.Helper()
	ctx := context.Background()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		l, err := cs.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // retried
		}
		if l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == node {
			return true, nil
		}
		l.Spec.HolderIdentity = &node
		// A conflict with a renewal fails it: the next round reads again.
		_, _ = cs.CoordinationV1().Leases(ns).Update(ctx, l, metav1.UpdateOptions{})
		return false, nil
	})
	if err != nil {
		t.Fatalf("handing the witness Lease to %s: %v", node, err)
	}
	time.Sleep(2500 * time.Millisecond)
	l, err := cs.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != node {
		t.Fatalf("the witness Lease after handing it to %s: %v, %v", node, l, err)
	}
}
