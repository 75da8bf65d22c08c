package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	cloudproviderapi "k8s.io/cloud-provider/api"
	"k8s.io/utils/ptr"

	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/images"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// TestRealNodes runs real nodes (containerd, kubelet with
// --cloud-provider=external, kube-proxy) in the lab's node namespaces: they
// register themselves, the CCM initializes them, and a pod runs on each and
// answers on its pod IP from its node's namespace.
func TestRealNodes(t *testing.T) {
	if err := framework.RealNodesAvailable(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	lab := netlab.New(t, netlab.Options{Nodes: 2, Speakers: 1})
	ctx := context.Background()

	dir := t.TempDir()
	var archives []string
	var pauseRef string
	for _, o := range []images.Options{images.Pause(filepath.Join(dir, "pause.tar")), images.Echo(filepath.Join(dir, "echo.tar"))} {
		res, err := images.Build(ctx, o)
		if err != nil {
			t.Fatalf("build image %s: %v", o.Ref, err)
		}
		archives = append(archives, res.Path)
		if pauseRef == "" {
			pauseRef = res.Ref
		}
	}

	// Pod routes on: a request that kube-proxy sends to a pod on another
	// node goes through the router, no overlay.
	cfg := ccmConfig(t, lab, 0, "198.18.100.0/24", "2001:db8:100::/120")
	appendFile(t, cfg, "routes:\n  enabled: true\n")
	cp.StartCCMForTest(t, framework.CCMOptions{Name: "ccm-realnodes", CloudConfig: cfg, Args: []string{
		"--leader-elect-resource-name", "e2e-realnodes", "--cluster-cidr", framework.DefaultClusterCIDR,
		"--allocate-node-cidrs=false", "--configure-cloud-routes=true", "--route-reconciliation-period", "2s",
		"--node-monitor-period", "1s",
	}})
	ns := framework.NewNamespace(t, client, framework.NamespaceName(t), framework.ReleaseServices(30*time.Second))
	if _, err := client.CoreV1().ServiceAccounts(ns).Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	nodes := make([]*framework.RealNode, len(lab.Nodes))
	for i := range lab.Nodes {
		name := fmt.Sprintf("real%d", i)
		t.Cleanup(func() { _ = client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		nodes[i] = cp.StartRealNode(ctx, t, framework.RealNodeOptions{
			Name:         name,
			NetNS:        lab.Nodes[i],
			NodeIPs:      []string{lab.NodeAddrs(netlab.IPv4)[i].String(), lab.NodeAddrs(netlab.IPv6)[i].String()},
			PodCIDRs:     []string{fmt.Sprintf("198.19.%d.0/24", 10+i), fmt.Sprintf("2001:db8:19:%d::/64", 10+i)},
			Images:       archives,
			SandboxImage: pauseRef,
		})
	}

	// Registered by the kubelet, initialized by the CCM, Ready.
	for i, n := range nodes {
		var node *v1.Node
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			got, err := client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
			if err != nil {
				return false, nil //nolint:nilerr // not registered yet
			}
			node = got
			return nodeInitialized(got) && got.Spec.ProviderID != "" && nodeReady(got), nil
		})
		if err != nil {
			t.Fatalf("node %s not initialized and Ready: %v; last seen: taints %v, providerID %q, conditions %v",
				n.Name, err, taintsOf(node), providerIDOf(node), conditionsOf(node))
		}
		t.Logf("node %s: providerID %s, Ready %.1fs after its start, addresses %v",
			n.Name, node.Spec.ProviderID, time.Since(n.Started).Seconds(), node.Status.Addresses)
		want := lab.NodeAddrs(netlab.IPv4)[i].String()
		if !slices.ContainsFunc(node.Status.Addresses, func(a v1.NodeAddress) bool {
			return a.Type == v1.NodeInternalIP && a.Address == want
		}) {
			t.Errorf("node %s: addresses %v lack InternalIP %s", n.Name, node.Status.Addresses, want)
		}
	}

	// A pod on each node (nodeName: no scheduler here) answers on its pod
	// IP from inside its node's namespace.
	podIPs := make([]string, len(nodes))
	for i, n := range nodes {
		pod := echoPod(fmt.Sprintf("echo-%d", i), n.Name)
		start := time.Now()
		if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// Gone from the API before the kubelets stop: no pod garbage
		// collector runs here to remove pods of deleted nodes.
		t.Cleanup(func() {
			_ = client.CoreV1().Pods(ns).Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
		})
		var ip, ip6 string
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			p, err := client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if p.Status.Phase != v1.PodRunning || p.Status.PodIP == "" {
				return false, nil
			}
			ip = p.Status.PodIP
			for _, a := range p.Status.PodIPs {
				if netip.MustParseAddr(a.IP).Is6() {
					ip6 = a.IP
				}
			}
			return true, nil
		})
		if err != nil {
			p, _ := client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
			t.Fatalf("pod %s not running: %v; status %+v", pod.Name, err, p.Status)
		}
		var body string
		err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			body, err = n.Get(ctx, "http://"+net.JoinHostPort(ip, "8080")+"/")
			return err == nil, nil
		})
		if err != nil {
			t.Fatalf("pod %s at %s does not answer from %s: %v", pod.Name, ip, n.Name, err)
		}
		var got struct{ Pod, Node, PodIP string }
		if err := json.Unmarshal([]byte(body), &got); err != nil {
			t.Fatalf("pod %s answered %q: %v", pod.Name, body, err)
		}
		if got.Pod != pod.Name || got.Node != n.Name || got.PodIP != ip {
			t.Errorf("pod %s answered %s, want its name, node %s and IP %s", pod.Name, body, n.Name, ip)
		}
		t.Logf("pod %s on %s answered from %s %.1fs after its creation", pod.Name, n.Name, ip, time.Since(start).Seconds())
		// Dual-stack: the CNI config has a range per family of the node's
		// pod CIDRs.
		if ip6 == "" {
			t.Errorf("pod %s has no IPv6 address: %v", pod.Name, ip)
		} else if _, err := n.Get(ctx, "http://"+net.JoinHostPort(ip6, "8080")+"/"); err != nil {
			t.Errorf("pod %s does not answer on %s: %v", pod.Name, ip6, err)
		}
		podIPs[i] = ip
	}
	for _, n := range nodes {
		if u, err := n.Usage(); err == nil {
			t.Logf("node %s: containerd, kubelet, kube-proxy and shims use %d MiB RSS, %s CPU so far", n.Name, u.RSS>>20, u.CPU.Round(10*time.Millisecond))
		}
	}

	t.Run("LoadBalancer through router, node, kube-proxy to the pods", func(t *testing.T) {
		for i := range nodes {
			waitPrefix(t, lab, netip.MustParsePrefix(fmt.Sprintf("198.19.%d.0/24", 10+i)), lab.NodeAddrs(netlab.IPv4)[i])
		}
		framework.CreateLoadBalancer(t, client, ns, "echo")
		vip := waitVIPs(t, ns, "echo", 1)[0]
		// No EndpointSlice controller here: the slice it would write for the
		// two pods (the Service has no selector).
		eps := make([]framework.Endpoint, len(nodes))
		for i, n := range nodes {
			eps[i] = framework.Endpoint{Address: podIPs[i], Node: n.Name}
		}
		slice := framework.EndpointSlice(ns, "echo", "e2e", eps...)
		slice.Ports[0].Port = ptr.To[int32](8080)
		if _, err := client.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitRoute(t, lab, vip, lab.NodeAddrs(netlab.IPv4)...)
		start := time.Now()
		// Each node's kube-proxy programs the Service on its own sync; until
		// every one has, a connection the router sends to a node that has
		// not yet is rejected there. Wait for ten answers in a row (new
		// connections, spread over the nodes by the router's ECMP hash).
		var body string
		inARow := 0
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			var err error
			if body, err = lab.ClientGet(ctx, netlab.VIPURL(vip)); err != nil {
				inARow = 0
				return false, nil //nolint:nilerr // retried until ten answers in a row
			}
			inARow++
			return inARow >= 10, nil
		})
		if err != nil {
			t.Fatalf("%s does not answer from the client ten times in a row: %v", vip, err)
		}
		t.Logf("%s answered ten times in a row %.1fs after its route: %s", vip, time.Since(start).Seconds(), body)
		pods := map[string]int{}
		for range 20 {
			body, err := lab.ClientGet(ctx, netlab.VIPURL(vip))
			if err != nil {
				t.Fatalf("request to %s: %v", vip, err)
			}
			var got struct{ Pod string }
			if err := json.Unmarshal([]byte(body), &got); err != nil {
				t.Fatalf("%s answered %q: %v", vip, body, err)
			}
			pods[got.Pod]++
		}
		t.Logf("answers per pod: %v", pods)
		if len(pods) != len(nodes) {
			t.Errorf("20 requests reached pods %v, want all %d", pods, len(nodes))
		}
	})
}

// appendFile appends s to the file at path.
func appendFile(t *testing.T, path, s string) {
	t.Helper()
	b, err := os.ReadFile(path) //nolint:gosec // in the test's temporary folder
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(b, s...), 0o600); err != nil { //nolint:gosec // in the test's temporary folder
		t.Fatal(err)
	}
}

// echoPod is the echo image on node, with its identity from the Downward
// API.
func echoPod(name, node string) *v1.Pod {
	env := func(name, path string) v1.EnvVar {
		return v1.EnvVar{Name: name, ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: path}}}
	}
	no := false
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "echo"}},
		Spec: v1.PodSpec{
			NodeName:                      node,
			AutomountServiceAccountToken:  &no,
			TerminationGracePeriodSeconds: new(int64),
			Tolerations:                   []v1.Toleration{{Operator: v1.TolerationOpExists}},
			Containers: []v1.Container{{
				Name:            "echo",
				Image:           images.Ref("echo"),
				ImagePullPolicy: v1.PullNever,
				Ports:           []v1.ContainerPort{{ContainerPort: 8080}},
				Env:             []v1.EnvVar{env("POD_NAME", "metadata.name"), env("NODE_NAME", "spec.nodeName"), env("POD_IP", "status.podIP")},
			}},
		},
	}
}

func nodeInitialized(n *v1.Node) bool {
	return !slices.ContainsFunc(n.Spec.Taints, func(t v1.Taint) bool { return t.Key == cloudproviderapi.TaintExternalCloudProvider })
}

func nodeReady(n *v1.Node) bool {
	return slices.ContainsFunc(n.Status.Conditions, func(c v1.NodeCondition) bool {
		return c.Type == v1.NodeReady && c.Status == v1.ConditionTrue
	})
}

func taintsOf(n *v1.Node) []v1.Taint {
	if n == nil {
		return nil
	}
	return n.Spec.Taints
}

func providerIDOf(n *v1.Node) string {
	if n == nil {
		return ""
	}
	return n.Spec.ProviderID
}

func conditionsOf(n *v1.Node) []string {
	if n == nil {
		return nil
	}
	var out []string
	for _, c := range n.Status.Conditions {
		out = append(out, fmt.Sprintf("%s=%s (%s)", c.Type, c.Status, c.Reason))
	}
	return out
}
