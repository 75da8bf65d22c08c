package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// ccmConfig is the cloud-config of replica i: the pools, and the router's
// IPv4 and IPv6 sessions from the replica's own source addresses.
func ccmConfig(t *testing.T, lab *netlab.Lab, i int, pool4, pool6 string) string {
	t.Helper()
	body := fmt.Sprintf(`apiVersion: metal-ccm.io/v1alpha1
kind: CloudConfig
loadBalancer:
  pools:
  - name: default
    addresses: [%s, %q]
bgp:
  asn: %d
  peers:
  - address: %s
    asn: %d
    localAddress: %s
    holdTime: 9s
  - address: %q
    asn: %d
    localAddress: %q
    holdTime: 9s
`, pool4, pool6, netlab.DefaultSpeakerASN,
		netlab.RouterAddr(netlab.IPv4), netlab.DefaultRouterASN, lab.SpeakerAddrs(netlab.IPv4)[i],
		netlab.RouterAddr(netlab.IPv6), netlab.DefaultRouterASN, lab.SpeakerAddrs(netlab.IPv6)[i])
	p := filepath.Join(t.TempDir(), fmt.Sprintf("cloud-config-%d.yaml", i))
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// startReplica starts replica i as the admin.
func startReplica(t *testing.T, lab *netlab.Lab, i int, lease, pool4, pool6 string) *framework.CCM {
	t.Helper()
	return startReplicaAs(t, lab, i, "", lease, pool4, pool6)
}

// leastPrivilegeKubeconfig applies deploy/rbac.yaml and returns a kubeconfig
// with only its ServiceAccount's token. Its Role allows one lease name:
// cloud-controller-manager.
func leastPrivilegeKubeconfig(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	if _, err := cp.Kubectl(ctx, "apply", "-f", filepath.Join(framework.RepoRoot(), "deploy", "rbac.yaml")); err != nil {
		t.Fatal(err)
	}
	kc, err := cp.ServiceAccountKubeconfig(ctx, "kube-system", "metal-cloud-controller-manager")
	if err != nil {
		t.Fatal(err)
	}
	return kc
}

func startReplicaAs(t *testing.T, lab *netlab.Lab, i int, kubeconfig, lease, pool4, pool6 string) *framework.CCM {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := fmt.Sprintf("ccm-%s-%d", strings.ToLower(t.Name()), i)
	c, err := cp.StartCCM(ctx, framework.CCMOptions{
		Name: name, CloudConfig: ccmConfig(t, lab, i, pool4, pool6), Kubeconfig: kubeconfig,
		Args: []string{"--leader-elect-resource-name", lease, "--leader-elect-lease-duration", "4s",
			"--leader-elect-renew-deadline", "3s", "--leader-elect-retry-period", "500ms",
			"--node-monitor-period", "1s"},
	})
	if err != nil {
		t.Fatalf("start CCM replica %d: %v", i, err)
	}
	t.Cleanup(func() {
		c.Stop(5 * time.Second)
		if t.Failed() {
			log := c.Log()
			if lines := strings.Split(log, "\n"); len(lines) > 80 {
				log = strings.Join(lines[len(lines)-80:], "\n")
			}
			t.Logf("%s log:\n%s", name, log)
		}
	})
	return c
}

// registerLabNodes registers the lab's nodes as Ready, initialized nodes
// (the tests of node initialization are elsewhere).
func registerLabNodes(t *testing.T, lab *netlab.Lab) {
	t.Helper()
	ctx := context.Background()
	for i := range lab.Nodes {
		name := lab.NodeName(i)
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		node, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		node.Status.Addresses = []v1.NodeAddress{
			{Type: v1.NodeInternalIP, Address: lab.NodeAddrs(netlab.IPv4)[i].String()},
			{Type: v1.NodeInternalIP, Address: lab.NodeAddrs(netlab.IPv6)[i].String()},
		}
		node.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, LastHeartbeatTime: metav1.Now()}}
		if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func setReady(t *testing.T, name string, ready bool) {
	t.Helper()
	if err := framework.SetNodeReady(context.Background(), client, name, ready); err != nil {
		t.Fatal(err)
	}
}

func namespace(t *testing.T) string {
	t.Helper()
	name := strings.ToLower(t.Name())
	if _, err := client.CoreV1().Namespaces().Create(context.Background(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	return name
}

func createService(t *testing.T, ns, name string, mutate ...func(*v1.Service)) {
	t.Helper()
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name},
			Ports: []v1.ServicePort{{Name: "http", Protocol: v1.ProtocolTCP, Port: 80}}},
	}
	for _, m := range mutate {
		m(svc)
	}
	if _, err := client.CoreV1().Services(ns).Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func dualStack(s *v1.Service) {
	s.Spec.IPFamilyPolicy = ptr.To(v1.IPFamilyPolicyRequireDualStack)
	s.Spec.IPFamilies = []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol}
}

func local(s *v1.Service) { s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal }

// waitVIPs waits until the Service has n addresses.
func waitVIPs(t *testing.T, ns, name string, n int) []netip.Addr {
	t.Helper()
	var out []netip.Addr
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		s, err := client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // keep polling
		}
		out = out[:0]
		for _, in := range s.Status.LoadBalancer.Ingress {
			out = append(out, netip.MustParseAddr(in.IP))
		}
		return len(out) == n, nil
	})
	if err != nil {
		t.Fatalf("service %s/%s has %v, want %d addresses", ns, name, out, n)
	}
	return out
}

func hostPrefix(ip netip.Addr) netip.Prefix { return netip.PrefixFrom(ip, ip.BitLen()) }

// waitRoute waits until the router's kernel has exactly these next hops for ip
// (none: no route).
func waitRoute(t *testing.T, lab *netlab.Lab, ip netip.Addr, hops ...netip.Addr) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := lab.WaitRoute(ctx, hostPrefix(ip), hops); err != nil {
		r, _, _ := lab.Route(hostPrefix(ip))
		t.Fatalf("route to %s: want next hops %v, router has %v: %v", ip, hops, r.NextHops, err)
	}
}

// endpointsOn publishes the Service's endpoints as ready on the given nodes,
// as the EndpointSlice controller would for pods there.
func endpointsOn(t *testing.T, ns, svc string, nodes ...string) {
	t.Helper()
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: svc + "-e2e",
			Labels: map[string]string{discoveryv1.LabelServiceName: svc, discoveryv1.LabelManagedBy: "e2e.metal-ccm.io"}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	for i, n := range nodes {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{fmt.Sprintf("198.19.%d.10", i)},
			NodeName:   ptr.To(n),
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
		})
	}
	ctx := context.Background()
	_ = client.DiscoveryV1().EndpointSlices(ns).Delete(ctx, s.Name, metav1.DeleteOptions{})
	if _, err := client.DiscoveryV1().EndpointSlices(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// serveVIP puts ip on every node's loopback (as kube-proxy would route it)
// and answers HTTP on it with the node's name.
func serveVIP(t *testing.T, lab *netlab.Lab, ip netip.Addr) {
	t.Helper()
	for i := range lab.Nodes {
		if err := lab.AddLoopbackVIP(i, ip); err != nil {
			t.Fatal(err)
		}
		if err := lab.ServeHTTP(i, netip.AddrPortFrom(ip, 80).String()); err != nil {
			t.Fatal(err)
		}
	}
}

func vipURL(ip netip.Addr) string { return "http://" + netip.AddrPortFrom(ip, 80).String() + "/" }

func leads(log string) bool {
	return strings.Contains(strings.ToLower(log), "successfully acquired lease")
}
