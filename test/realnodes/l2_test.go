package realnodes

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/metal-ccm/metal-ccm/pkg/annotation"
	"github.com/metal-ccm/metal-ccm/pkg/svcstatus"
	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// l2Failover is the bound on a failover, from the fault to requests
// succeeding again (the goal: 2 s median, 3 s at most).
const l2Failover = 3 * time.Second

// TestL2OnRealNodes runs an L2 lab (a bridge as the switch, a client on
// it, no router) with three real nodes (containerd, kubelet, kube-proxy),
// the real node agent on each with its least-privilege identity, and the
// CCM on the first node's network, as a user of L2 runs them. The client
// reaches each address of a dual-stack Service through the node the agents
// choose (its MAC in the client's neighbour table) and kube-proxy; when
// that node's agent is killed, or its link goes down ("power off"),
// another node answers and requests succeed again within l2Failover; the
// CCM shows the answering node on the Service; with
// externalTrafficPolicy Local the answering node moves with the endpoint;
// with l2.failback Sticky an address stays with the node that took it
// over when its owner comes back (stickyFailback).
func TestL2OnRealNodes(t *testing.T) {
	lab := startL2RealNodes(t)
	ctx := context.Background()
	ns := framework.NewNamespace(t, client, framework.NamespaceName(t), framework.ReleaseServices(30*time.Second))
	defaultServiceAccount(t, ns)
	t.Cleanup(func() { deletePods(ns) })

	framework.CreateLoadBalancer(t, client, ns, "echo", withTargetPort(8080), framework.DualStack)
	vips := waitVIPs(t, ns, "echo", 2)
	all := []int{0, 1, 2}
	owners := []int{netlab.L2Owner(vips[0], all), netlab.L2Owner(vips[1], all)}
	// The pods stay off the nodes that answer, so that a fault of an
	// answering node takes only its answering away, not endpoints.
	var podNodes []string
	for i, n := range lab.RealNodes {
		if !slices.Contains(owners, i) {
			podNodes = append(podNodes, n.Name)
		}
	}
	createDeployment(t, ns, echoDeployment("echo", int32(len(podNodes)), podNodes)) //nolint:gosec // at most three
	waitPods(t, ns, "echo", len(podNodes))

	t.Run("the client reaches each address through the node the agents choose", func(t *testing.T) {
		for k, vip := range vips {
			took := lab.WaitMAC(t, vip, owners[k], time.Minute)
			lab.WaitAnswers(t, vip)
			t.Logf("%s answered by %s, %s after the pods were ready", vip, lab.RealNodes[owners[k]].Name, took.Round(time.Millisecond))
		}
		waitL2Annotation(t, ns, "echo", map[netip.Addr]string{vips[0]: lab.RealNodes[owners[0]].Name, vips[1]: lab.RealNodes[owners[1]].Name})
		// The Service's status tells the same: announced, and by whom.
		svc := framework.WaitServiceCondition(t, client, ns, "echo", svcstatus.TypeAnnounced, metav1.ConditionTrue, svcstatus.ReasonAnnounced, 30*time.Second)
		for k, vip := range vips {
			if want := vip.String() + " L2 answered by " + lab.RealNodes[owners[k]].Name; !strings.Contains(svc.Annotations[annotation.Summary], want) {
				t.Errorf("%s is %q, want it to contain %q", annotation.Summary, svc.Annotations[annotation.Summary], want)
			}
		}
	})
	if t.Failed() {
		return
	}

	for k, vip := range vips {
		owner := owners[k]
		next := netlab.L2Owner(vip, slices.DeleteFunc(slices.Clone(all), func(i int) bool { return i == owner }))
		t.Run(fmt.Sprintf("SIGKILL of the answering agent (%s)", vip), func(t *testing.T) {
			loop := lab.StartFailoverLoop(vip)
			fault := time.Now()
			lab.Agents[owner].Kill()
			took := lab.WaitMAC(t, vip, next, 10*time.Second)
			res := loop.StopAfter(time.Second)
			back := res.Recovered(fault)
			t.Logf("agent of %s killed: %s answers after %s; requests %d, failed %d (%v), succeeding again %s after the fault",
				lab.RealNodes[owner].Name, lab.RealNodes[next].Name, took.Round(time.Millisecond), len(res), res.Failed(fault), res.FirstError(), back.Round(time.Millisecond))
			if back > l2Failover {
				t.Errorf("requests succeeded again %s after the fault, more than %s", back, l2Failover)
			}
			if err := lab.Agents[owner].Restart(); err != nil {
				t.Fatal(err)
			}
			lab.WaitMAC(t, vip, owner, 30*time.Second)
			lab.WaitAnswers(t, vip)
		})
		t.Run(fmt.Sprintf("the answering node's link down (%s)", vip), func(t *testing.T) {
			loop := lab.StartFailoverLoop(vip)
			fault := time.Now()
			if err := lab.SetNodeLink(owner, false); err != nil {
				t.Fatal(err)
			}
			restored := false
			restore := func() {
				if !restored {
					restored = true
					if err := lab.SetNodeLink(owner, true); err != nil {
						t.Error(err)
					}
				}
			}
			defer restore()
			took := lab.WaitMAC(t, vip, next, 10*time.Second)
			res := loop.StopAfter(3 * time.Second)
			back := res.Recovered(fault)
			t.Logf("timeline:%s", res.Timeline(fault))
			t.Logf("link of %s down: %s answers after %s; requests %d, failed %d (%v), succeeding again %s after the fault",
				lab.RealNodes[owner].Name, lab.RealNodes[next].Name, took.Round(time.Millisecond), len(res), res.Failed(fault), res.FirstError(), back.Round(time.Millisecond))
			if back > l2Failover {
				t.Errorf("requests succeeded again %s after the fault, more than %s", back, l2Failover)
			}
			waitL2Annotation(t, ns, "echo", map[netip.Addr]string{vip: lab.RealNodes[next].Name})
			restore()
			lab.WaitMAC(t, vip, owner, 30*time.Second)
			lab.WaitAnswers(t, vip)
		})
	}

	t.Run(fmt.Sprintf("the answering node's kube-proxy stopped, its rules gone (%s)", vips[0]), func(t *testing.T) {
		vip, owner := vips[0], owners[0]
		next := netlab.L2Owner(vip, slices.DeleteFunc(slices.Clone(all), func(i int) bool { return i == owner }))
		node := lab.RealNodes[owner]
		loop := lab.StartFailoverLoop(vip)
		fault := time.Now()
		if err := node.StopKubeProxy(); err != nil {
			t.Fatal(err)
		}
		restarted := false
		restart := func() {
			if !restarted {
				restarted = true
				if err := node.RestartKubeProxy(); err != nil {
					t.Error(err)
				}
			}
		}
		defer restart()
		took := lab.WaitMAC(t, vip, next, 10*time.Second)
		res := loop.StopAfter(time.Second)
		back := res.Recovered(fault)
		t.Logf("kube-proxy of %s stopped, its rules gone: %s answers after %s; requests %d, failed %d (%v), succeeding again %s after the fault",
			node.Name, lab.RealNodes[next].Name, took.Round(time.Millisecond), len(res), res.Failed(fault), res.FirstError(), back.Round(time.Millisecond))
		if back > l2Failover {
			t.Errorf("requests succeeded again %s after the fault, more than %s", back, l2Failover)
		}
		if n := waitNode(t, node.Name, time.Second, func(*v1.Node) bool { return true }); !nodeReady(n) {
			t.Errorf("node %s is not Ready: the move was not the agent's check", n.Name)
		}
		if !lab.Agents[owner].LogContains("kube-proxy fails its health check") {
			t.Errorf("the agent of %s never said that kube-proxy fails", node.Name)
		}
		waitL2Annotation(t, ns, "echo", map[netip.Addr]string{vip: lab.RealNodes[next].Name})
		// kube-proxy back: its node passes again and takes its address back.
		restart()
		lab.WaitMAC(t, vip, owner, 30*time.Second)
		lab.WaitAnswers(t, vip)
	})

	t.Run("externalTrafficPolicy Local: the answering node moves with the endpoint", func(t *testing.T) {
		framework.CreateLoadBalancer(t, client, ns, "local", withTargetPort(8080), framework.Local)
		vip := waitVIPs(t, ns, "local", 1)[0]
		for _, i := range []int{1, 2} {
			name := lab.RealNodes[i].Name
			d := echoDeployment("local", 1, []string{name})
			if i == 1 {
				createDeployment(t, ns, d)
			} else if _, err := client.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			pods := waitPodsOn(t, ns, "local", name)
			took := lab.WaitMAC(t, vip, i, time.Minute)
			lab.WaitAnswers(t, vip)
			t.Logf("the endpoint %s on %s: %s answered by %s after %s", pods[0].Name, name, vip, name, took.Round(time.Millisecond))
			waitL2Annotation(t, ns, "local", map[netip.Addr]string{vip: name})
		}
	})

	t.Run(fmt.Sprintf("Sticky failback: the address stays with the node that took it over (%s)", vips[0]), func(t *testing.T) {
		stickyFailback(t, lab, ns, vips[0])
	})
}

// startL2RealNodes starts the L2 cluster of the test, with netlab's L2
// pool.
func startL2RealNodes(t *testing.T) *netlab.L2Cluster {
	t.Helper()
	archives, pauseRef := testImages(t)
	return netlab.StartL2Cluster(t, netlab.L2ClusterOptions{
		CP: cp, Client: client, Prefix: "l2real", Images: archives, SandboxImage: pauseRef,
		CloudConfig: writeConfig(t, netlab.L2TestCloudConfig(t, "")), LeaseName: "l2realnodes",
	})
}

// waitL2Annotation waits until the Service's metal-ccm.io/l2-nodes names,
// for each address of want, the node that answers it.
func waitL2Annotation(t *testing.T, ns, name string, want map[netip.Addr]string) {
	t.Helper()
	var got string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		svc, err := client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // retried
		}
		got = svc.Annotations[annotation.L2Nodes]
		for addr, node := range want {
			if !slices.Contains(strings.Split(got, ","), addr.String()+"="+node) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("service %s/%s: %s is %q, want %v", ns, name, annotation.L2Nodes, got, want)
	}
}

// waitPodsOn waits until the one Ready pod app=name runs on node, and the
// Deployment has no other pod left.
func waitPodsOn(t *testing.T, ns, name, node string) []v1.Pod {
	t.Helper()
	var pods []v1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			return false, err
		}
		pods = l.Items
		return len(pods) == 1 && pods[0].Spec.NodeName == node && podReady(&pods[0]), nil
	})
	if err != nil {
		t.Fatalf("want the one pod app=%s Ready on %s: %v (%d pods)", name, node, err, len(pods))
	}
	return pods
}
