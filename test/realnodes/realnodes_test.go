package realnodes

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// ccmPodName is the Pod the replica's Events about itself name.
const ccmPodName = "ccm-realnodes"

// labZone is the zone the cloud-config's topology rule gives the lab's
// segment.
const labZone = "lab-a"

// TestRealNodes runs three real nodes (containerd, kubelet with
// --cloud-provider=external, kube-proxy) behind the lab's router, with
// kube-scheduler and the node-lifecycle controller, and the CCM as a user
// runs it: the nodes register and are initialized, a Deployment spreads
// over them, LoadBalancer Services of both traffic policies are reached
// from the client through router, node and kube-proxy, pods reach each
// other across nodes through the router's pod routes, and a node whose
// kubelet is killed stops getting traffic. One lab and one set of nodes
// serve every subtest, in order.
func TestRealNodes(t *testing.T) {
	lab := netlab.New(t, netlab.Options{Nodes: 3, Speakers: 1})
	ctx := context.Background()
	archives, pauseRef := testImages(t)

	// KCM allocates the pod CIDRs; the CCM announces them (routes).
	cfg := writeConfig(t, lab.CloudConfig(0, "198.18.100.0/24", "2001:db8:100::/120")+fmt.Sprintf(`nodes:
  topology:
  - {subnet: %s, region: lab, zone: %s}
routes:
  enabled: true
`, netip.PrefixFrom(lab.NodeAddrs(netlab.IPv4)[0], 24).Masked(), labZone))
	// POD_NAME and POD_NAMESPACE as the chart sets them: the replica's
	// Events about itself name this (absent) Pod.
	ccm := cp.StartCCMForTest(t, framework.CCMOptions{Name: "ccm-realnodes", CloudConfig: cfg, HealthChecks: true,
		Wrapper: []string{"env", "POD_NAMESPACE=kube-system", "POD_NAME=" + ccmPodName}, Args: []string{
			"--leader-elect-resource-name", "realnodes", "--cluster-cidr", framework.DefaultClusterCIDR,
			"--allocate-node-cidrs=false", "--configure-cloud-routes=true", "--route-reconciliation-period", "2s",
			"--node-monitor-period", "1s",
		}})
	ns := framework.NewNamespace(t, client, framework.NamespaceName(t), framework.ReleaseServices(30*time.Second))
	defaultServiceAccount(t, ns)

	nodes := make([]*framework.RealNode, len(lab.Nodes))
	for i := range lab.Nodes {
		name := fmt.Sprintf("real%d", i)
		t.Cleanup(func() { _ = client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		nodes[i] = cp.StartRealNode(ctx, t, framework.RealNodeOptions{
			Name: name, NetNS: lab.Nodes[i], NodeIPs: labNodeIPs(lab, i),
			Images: archives, SandboxImage: pauseRef,
		})
	}
	// Pods gone from the API before the kubelets stop (cleanups run last
	// first): a pod of a deleted node would wait for the pod garbage
	// collector.
	t.Cleanup(func() { deletePods(ns) })

	t.Run("nodes are initialized", func(t *testing.T) {
		for i, n := range nodes {
			node := waitNode(t, n.Name, time.Minute, func(node *v1.Node) bool {
				return !framework.Uninitialized(node) && node.Spec.ProviderID != "" && nodeReady(node) &&
					!hasTaint(node, v1.TaintNodeNotReady) && len(node.Spec.PodCIDRs) == 2
			})
			t.Logf("node %s: Ready and initialized %.1fs after its start: providerID %s, pod CIDRs %v, addresses %v",
				n.Name, time.Since(n.Started).Seconds(), node.Spec.ProviderID, node.Spec.PodCIDRs, node.Status.Addresses)
			if got := node.Labels[v1.LabelTopologyZone]; got != labZone {
				t.Errorf("node %s: zone %q, want %q", n.Name, got, labZone)
			}
			want := lab.NodeAddrs(netlab.IPv4)[i].String()
			if !slices.ContainsFunc(node.Status.Addresses, func(a v1.NodeAddress) bool {
				return a.Type == v1.NodeInternalIP && a.Address == want
			}) {
				t.Errorf("node %s: addresses %v lack InternalIP %s", n.Name, node.Status.Addresses, want)
			}
		}
	})
	if t.Failed() {
		return
	}

	// The router routes each node's pod CIDRs to it (the CCM's pod routes).
	for i, n := range nodes {
		node, err := client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range node.Spec.PodCIDRs {
			p := netip.MustParsePrefix(c)
			lab.RequireRoute(t, p, lab.NodeAddrs(netlab.FamilyOf(p.Addr()))[i])
		}
	}

	var pods []v1.Pod
	t.Run("a Deployment spreads over the nodes", func(t *testing.T) {
		createDeployment(t, ns, echoDeployment("echo", int32(len(nodes)), nil)) //nolint:gosec // three nodes
		pods = waitPods(t, ns, "echo", len(nodes))
		var on []string
		for _, p := range pods {
			on = append(on, p.Spec.NodeName)
		}
		slices.Sort(on)
		if len(slices.Compact(on)) != len(nodes) {
			t.Errorf("pods on nodes %v, want one on each of the %d nodes", on, len(nodes))
		}
	})
	if t.Failed() {
		return
	}

	t.Run("pods reach pods on other nodes through the router, IPv4 and IPv6", func(t *testing.T) {
		// From each pod to the next node's pod, through the source pod's
		// own /fetch: the target sees the source pod's address (no
		// masquerade, no overlay).
		for i, from := range pods {
			to := pods[(i+1)%len(pods)]
			for _, fam := range []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol} {
				src, dst := podIP(from, fam), podIP(to, fam)
				if src == "" || dst == "" {
					t.Fatalf("pods %s %v, %s %v: no %s address", from.Name, from.Status.PodIPs, to.Name, to.Status.PodIPs, fam)
				}
				fetch := "http://" + net.JoinHostPort(podIP(from, v1.IPv4Protocol), "8080") + "/fetch?url=" +
					url.QueryEscape("http://"+net.JoinHostPort(dst, "8080")+"/")
				var got echoReply
				err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
					var err error
					got, err = getEcho(ctx, nodes[nodeIndex(nodes, from.Spec.NodeName)], fetch)
					return err == nil, nil
				})
				if err != nil {
					t.Fatalf("pod %s (%s) cannot reach pod %s at %s: %v", from.Name, from.Spec.NodeName, to.Name, dst, err)
				}
				host, _, _ := net.SplitHostPort(got.Client)
				if got.Pod != to.Name || host != src {
					t.Errorf("%s -> %s (%s): answered by %s seeing client %s, want %s seeing %s", from.Name, dst, fam, got.Pod, got.Client, to.Name, src)
				}
			}
		}
	})

	var clusterVIP netip.Addr
	t.Run("LoadBalancer, externalTrafficPolicy Cluster: every node, every pod", func(t *testing.T) {
		framework.CreateLoadBalancer(t, client, ns, "echo", withTargetPort(8080))
		clusterVIP = waitVIPs(t, ns, "echo", 1)[0]
		lab.RequireRoute(t, netlab.HostPrefix(clusterVIP), lab.NodeAddrs(netlab.IPv4)...)
		waitAnswers(t, lab, clusterVIP)
		seen := map[string]int{}
		for range 30 {
			got, err := clientEcho(ctx, lab, clusterVIP)
			if err != nil {
				t.Fatalf("request to %s: %v", clusterVIP, err)
			}
			seen[got.Pod]++
		}
		t.Logf("answers per pod: %v", seen)
		if len(seen) != len(pods) {
			t.Errorf("30 requests reached pods %v, want all %d", seen, len(pods))
		}
	})

	var localVIP netip.Addr
	t.Run("LoadBalancer, externalTrafficPolicy Local: only nodes with a pod, client address kept", func(t *testing.T) {
		// Pods on the first two nodes only.
		withPods := []string{nodes[0].Name, nodes[1].Name}
		createDeployment(t, ns, echoDeployment("local", 2, withPods))
		waitPods(t, ns, "local", 2)
		svc := framework.CreateLoadBalancer(t, client, ns, "local", withTargetPort(8080), framework.Local)
		port := svc.Spec.HealthCheckNodePort
		if port == 0 {
			t.Fatalf("Service %s has no healthCheckNodePort", svc.Name)
		}
		vip := waitVIPs(t, ns, "local", 1)[0]
		lab.RequireRoute(t, netlab.HostPrefix(vip), lab.NodeAddrs(netlab.IPv4)[:2]...)
		localVIP = vip
		// kube-proxy's own health check says the same: 200 where a local
		// endpoint is ready, 503 elsewhere.
		for i, n := range nodes {
			want := http.StatusOK
			if i == 2 {
				want = http.StatusServiceUnavailable
			}
			hc := "http://" + net.JoinHostPort(lab.NodeAddrs(netlab.IPv4)[i].String(), strconv.Itoa(int(port))) + "/healthz"
			var got int
			err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
				got = statusFrom(ctx, n, hc)
				return got == want, nil
			})
			if err != nil {
				t.Errorf("node %s: healthCheckNodePort %d answers %d, want %d", n.Name, port, got, want)
			}
		}
		waitAnswers(t, lab, vip)
		client4 := netlab.ClientAddr(netlab.IPv4).String()
		for range 10 {
			got, err := clientEcho(ctx, lab, vip)
			if err != nil {
				t.Fatalf("request to %s: %v", vip, err)
			}
			host, _, _ := net.SplitHostPort(got.Client)
			if !slices.Contains(withPods, got.Node) || host != client4 {
				t.Errorf("answered by %s on %s seeing client %s, want a pod on %v seeing %s", got.Pod, got.Node, got.Client, withPods, client4)
			}
		}
	})

	// Node health checks (kube-proxy's /healthz, a Local Service's
	// healthCheckNodePort): health_test.go.
	if !clusterVIP.IsValid() || !localVIP.IsValid() {
		t.Fatal("the LoadBalancer subtests failed: the rest needs their Services")
	}
	testKubeProxyKilled(t, lab, nodes, clusterVIP)
	testFailOpen(t, lab, nodes, ccm, clusterVIP)
	testPowerOff(t, lab, ns, nodes)
	testLocalFollowsHealth(t, lab, ns, nodes, localVIP)

	t.Run("a node whose kubelet is killed turns NotReady and stops getting traffic", func(t *testing.T) {
		dead := nodes[2]
		killed := time.Now()
		if err := syscall.Kill(dead.Kubelet.PID(), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitNode(t, dead.Name, framework.NodeMonitorGracePeriod+30*time.Second, func(node *v1.Node) bool { return !nodeReady(node) })
		notReady := time.Since(killed)
		lab.RequireRoute(t, netlab.HostPrefix(clusterVIP), lab.NodeAddrs(netlab.IPv4)[:2]...)
		t.Logf("kubelet of %s killed: NotReady after %.1fs, withdrawn from %s after %.1fs",
			dead.Name, notReady.Seconds(), clusterVIP, time.Since(killed).Seconds())
		// The router now sends every connection to a live node's
		// kube-proxy. (The dead node's pod may still answer through them:
		// only its kubelet died.)
		for range 10 {
			if _, err := clientEcho(ctx, lab, clusterVIP); err != nil {
				t.Fatalf("request to %s after the withdrawal: %v", clusterVIP, err)
			}
		}
	})

	for _, n := range nodes {
		if u, err := n.Usage(); err == nil {
			t.Logf("node %s: containerd, kubelet, kube-proxy and shims use %d MiB RSS, %s CPU", n.Name, u.RSS>>20, u.CPU.Round(10*time.Millisecond))
		}
	}
}
