package realnodes

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// withdrawBound is how long the tests wait for a failing node's path to
// go: the goal is 2 s (interval + 2 timeouts + BGP); the figures are in the
// chaos table, and a shared test machine may be slow.
const withdrawBound = 15 * time.Second

// hopsExcept are the lab nodes' IPv4 addresses without node skip.
func hopsExcept(lab *netlab.Lab, skip int) []netip.Addr {
	var out []netip.Addr
	for i, a := range lab.NodeAddrs(netlab.IPv4) {
		if i != skip {
			out = append(out, a)
		}
	}
	return out
}

// waitHops waits up to timeout until the router routes vip to exactly
// hops, and returns how long it took.
func waitHops(t *testing.T, lab *netlab.Lab, vip netip.Addr, timeout time.Duration, hops ...netip.Addr) time.Duration {
	t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := lab.WaitRoute(ctx, netlab.HostPrefix(vip), hops); err != nil {
		r, _, _ := lab.Route(netlab.HostPrefix(vip))
		t.Fatalf("route %s: want next hops %v within %s, router has %v: %v", vip, hops, timeout, r.NextHops, err)
	}
	return time.Since(start)
}

// killKubeProxy kills node n's kube-proxy (SIGKILL) and restarts it when
// the test ends; its nftables rules stay, as after a crash.
func killKubeProxy(t *testing.T, n *framework.RealNode) {
	t.Helper()
	n.KubeProxy.Kill()
	t.Cleanup(func() {
		if err := n.RestartKubeProxy(); err != nil {
			t.Errorf("restart kube-proxy of %s: %v", n.Name, err)
		}
	})
}

// testKubeProxyKilled: a node whose kube-proxy dies is withdrawn from a
// Cluster Service's address while its kubelet and links stay up (it stays
// Ready), and returns once kube-proxy answers again.
func testKubeProxyKilled(t *testing.T, lab *netlab.Lab, nodes []*framework.RealNode, vip netip.Addr) {
	t.Run("kube-proxy killed", func(t *testing.T) {
		killKubeProxy(t, nodes[1])
		took := waitHops(t, lab, vip, withdrawBound, hopsExcept(lab, 1)...)
		t.Logf("kube-proxy of %s killed: withdrawn from %s after %.2fs", nodes[1].Name, vip, took.Seconds())
		if n := waitNode(t, nodes[1].Name, time.Second, func(*v1.Node) bool { return true }); !nodeReady(n) {
			t.Errorf("node %s is not Ready: the withdrawal was not the health check's", n.Name)
		}
	})
	// The cleanup restarted kube-proxy: the node returns.
	took := waitHops(t, lab, vip, time.Minute, lab.NodeAddrs(netlab.IPv4)...)
	t.Logf("kube-proxy of %s back: returned to %s after %.2fs", nodes[1].Name, vip, took.Seconds())
}

// testFailOpen: when every node's kube-proxy is down, every node stays
// announced and the replica says it reaches no node.
func testFailOpen(t *testing.T, lab *netlab.Lab, nodes []*framework.RealNode, ccm *framework.CCM, vip netip.Addr) {
	t.Run("fail open: every kube-proxy killed", func(t *testing.T) {
		// Said once each time it happens (also while the nodes started:
		// Ready before their kube-proxy answered): wait for one more.
		const said = "No node passes its health check from this replica"
		before, eventsBefore := strings.Count(ccm.Log(), said), podEvents(t, "NoNodeReachable")
		for _, n := range nodes {
			killKubeProxy(t, n)
		}
		err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, withdrawBound, true,
			func(context.Context) (bool, error) { return strings.Count(ccm.Log(), said) > before, nil })
		if err != nil {
			t.Fatalf("the CCM never logged %q: %v", said, err)
		}
		r, ok, err := lab.Route(netlab.HostPrefix(vip))
		if err != nil || !ok || len(r.NextHops) != len(nodes) {
			t.Errorf("with every check failing, route %s: %v (found %v, %v), want all %d nodes", vip, r.NextHops, ok, err, len(nodes))
		}
		err = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true,
			func(context.Context) (bool, error) { return podEvents(t, "NoNodeReachable") > eventsBefore, nil })
		if err != nil {
			t.Errorf("no NoNodeReachable Event on the replica's Pod: %v", err)
		}
	})
	waitHops(t, lab, vip, time.Minute, lab.NodeAddrs(netlab.IPv4)...)
}

// testPowerOff: a node whose links go down (it neither answers nor resets)
// is withdrawn; requests, each on a new connection through the router, fail
// only until then; the node returns when its links come back. The Service's
// pods run on the other nodes: a pod on the dead node stays an endpoint
// until its node turns NotReady (kube-proxy's matter, not the load
// balancer's), and here the node's kubelet even stays Ready.
func testPowerOff(t *testing.T, lab *netlab.Lab, ns string, nodes []*framework.RealNode) {
	t.Run("a node powered off for the network", func(t *testing.T) {
		createDeployment(t, ns, echoDeployment("spared", 2, []string{nodes[0].Name, nodes[2].Name}))
		waitPods(t, ns, "spared", 2)
		framework.CreateLoadBalancer(t, client, ns, "spared", withTargetPort(8080))
		vip := waitVIPs(t, ns, "spared", 1)[0]
		waitHops(t, lab, vip, time.Minute, lab.NodeAddrs(netlab.IPv4)...)
		waitAnswers(t, lab, vip)
		loop := lab.StartRequests(vip)
		time.Sleep(time.Second)
		off := time.Now()
		if err := lab.SetNodeLink(1, false); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = lab.SetNodeLink(1, true) })
		took := waitHops(t, lab, vip, withdrawBound, hopsExcept(lab, 1)...)
		sent, failed, errs := loop.Stop()
		t.Logf("node %s off: withdrawn from %s after %.2fs; until then %d of %d requests failed %v",
			nodes[1].Name, vip, took.Seconds(), failed, sent, errs)
		// After the withdrawal no request fails.
		after := lab.StartRequests(vip)
		time.Sleep(3 * time.Second)
		if sent, failed, errs := after.Stop(); failed > 0 {
			t.Errorf("after the withdrawal %d of %d requests failed: %v", failed, sent, errs)
		}
		if err := lab.SetNodeLink(1, true); err != nil {
			t.Fatal(err)
		}
		back := waitHops(t, lab, vip, time.Minute, lab.NodeAddrs(netlab.IPv4)...)
		t.Logf("node %s on again: returned after %.2fs (%.1fs off)", nodes[1].Name, back.Seconds(), time.Since(off).Seconds())
	})
}

// testLocalFollowsHealth: moving a Local Service's pod from two nodes to
// the third moves its address's next hops with kube-proxy's
// healthCheckNodePort answers.
func testLocalFollowsHealth(t *testing.T, lab *netlab.Lab, ns string, nodes []*framework.RealNode, vip netip.Addr) {
	t.Run("a Local Service's pods move to another node", func(t *testing.T) {
		ctx := context.Background()
		d, err := client.AppsV1().Deployments(ns).Get(ctx, "local", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		moved := echoDeployment("local", 1, []string{nodes[2].Name})
		d.Spec.Template.Spec.Affinity = moved.Spec.Template.Spec.Affinity
		d.Spec.Replicas = moved.Spec.Replicas
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
		if _, err := client.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		took := waitHops(t, lab, vip, time.Minute, lab.NodeAddrs(netlab.IPv4)[2])
		t.Logf("pods of %s moved to %s: route followed after %.1fs", vip, nodes[2].Name, took.Seconds())
		waitAnswers(t, lab, vip)
		got, err := clientEcho(ctx, lab, vip)
		if err != nil || got.Node != nodes[2].Name {
			t.Errorf("answered by %+v (%v), want the pod on %s", got, err, nodes[2].Name)
		}
	})
}

// podEvents counts the Events of a reason on the replica's own Pod
// (repeated ones count their repetitions).
func podEvents(t *testing.T, reason string) int32 {
	t.Helper()
	l, err := client.CoreV1().Events("kube-system").List(context.Background(), metav1.ListOptions{
		FieldSelector: "involvedObject.kind=Pod,involvedObject.name=" + ccmPodName + ",reason=" + reason,
	})
	if err != nil {
		t.Fatal(err)
	}
	var n int32
	for _, e := range l.Items {
		n += max(e.Count, 1)
	}
	return n
}
