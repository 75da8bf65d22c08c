package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metal-ccm/metal-ccm/pkg/sessions"
	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// ccmConfig is the cloud-config of replica i: the pools, and the router's
// IPv4 and IPv6 sessions from the replica's own source addresses.
func ccmConfig(t *testing.T, lab *netlab.Lab, i int, pool4, pool6 string) string {
	t.Helper()
	return writeCloudConfig(t, fmt.Sprintf("cloud-config-%d.yaml", i), lab.CloudConfig(i, pool4, pool6))
}

// writeCloudConfig writes body to a file named name in a folder of the
// test's, and returns its path.
func writeCloudConfig(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
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

// startReplicaAs starts replica i with a kubeconfig ("": the admin's) and
// fast leader election; it is stopped when the test ends.
func startReplicaAs(t *testing.T, lab *netlab.Lab, i int, kubeconfig, lease, pool4, pool6 string) *framework.CCM {
	t.Helper()
	return startReplicaWith(t, fmt.Sprintf("ccm-%s-%d", strings.ToLower(t.Name()), i), kubeconfig, lease, ccmConfig(t, lab, i, pool4, pool6))
}

// startReplicaWith starts a replica named name with a kubeconfig ("": the
// admin's), the cloud-config at path cfg and fast leader election; it is
// stopped when the test ends.
func startReplicaWith(t *testing.T, name, kubeconfig, lease, cfg string) *framework.CCM {
	t.Helper()
	// As in its pod, it publishes its sessions (kubectl metal-ccm status)
	// in a Lease its pod would own: deleted once it stopped. A pod's name
	// is a DNS subdomain (a subtest's name has "/" and "_").
	pod := regexp.MustCompile(`[^a-z0-9.-]+`).ReplaceAllString(name, "-")
	t.Cleanup(func() {
		_ = client.CoordinationV1().Leases(metav1.NamespaceSystem).Delete(context.Background(), sessions.LeaseName(pod), metav1.DeleteOptions{})
	})
	return cp.StartCCMForTest(t, framework.CCMOptions{
		Name: name, CloudConfig: cfg, Kubeconfig: kubeconfig,
		Args: []string{"--leader-elect-resource-name", lease, "--leader-elect-lease-duration", "4s",
			"--leader-elect-renew-deadline", "3s", "--leader-elect-retry-period", "500ms",
			"--node-monitor-period", "1s"},
		Env: []string{"POD_NAMESPACE=" + metav1.NamespaceSystem, "POD_NAME=" + pod},
	})
}

// registerLabNodes registers the lab's nodes as Ready, initialized nodes
// (the tests of node initialization are elsewhere).
func registerLabNodes(t *testing.T, lab *netlab.Lab) {
	t.Helper()
	for i := range lab.Nodes {
		name := lab.NodeName(i)
		if _, err := framework.CreateReadyNode(context.Background(), client, name,
			lab.NodeAddrs(netlab.IPv4)[i].String(), lab.NodeAddrs(netlab.IPv6)[i].String()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
}

func setReady(t *testing.T, name string, ready bool) {
	t.Helper()
	if err := framework.SetNodeReady(context.Background(), client, name, ready); err != nil {
		t.Fatal(err)
	}
}

// waitVIPs waits until the Service has n addresses.
func waitVIPs(t *testing.T, ns, name string, n int) []netip.Addr {
	t.Helper()
	var out []netip.Addr
	for _, ip := range framework.WaitIngressIPs(t, client, ns, name, n, 30*time.Second) {
		out = append(out, netip.MustParseAddr(ip))
	}
	return out
}

// servedVIP creates the LoadBalancer Service ns/name, waits until the
// router routes its address to every node, and serves it there.
func servedVIP(t *testing.T, lab *netlab.Lab, ns, name string) netip.Addr {
	t.Helper()
	framework.CreateLoadBalancer(t, client, ns, name)
	vip := waitVIPs(t, ns, name, 1)[0]
	waitRoute(t, lab, vip, lab.NodeAddrs(netlab.IPv4)...)
	if err := lab.ServeVIP(vip); err != nil {
		t.Fatal(err)
	}
	return vip
}

// waitRoute waits until the router's kernel has exactly these next hops for
// ip (none: no route).
func waitRoute(t *testing.T, lab *netlab.Lab, ip netip.Addr, hops ...netip.Addr) {
	t.Helper()
	waitPrefix(t, lab, netlab.HostPrefix(ip), hops...)
}

// waitPrefix waits until the router's kernel has exactly these next hops for
// p (none: no route).
func waitPrefix(t *testing.T, lab *netlab.Lab, p netip.Prefix, hops ...netip.Addr) {
	t.Helper()
	lab.RequireRoute(t, p, hops...)
}

// waitEstablished waits up to timeout until the router's sessions with the
// speaker addresses are established.
func waitEstablished(t *testing.T, lab *netlab.Lab, timeout time.Duration, addrs ...netip.Addr) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := lab.WaitEstablished(ctx, addrs...); err != nil {
		t.Fatalf("sessions of %v: %v", addrs, err)
	}
}

// endpointsOn publishes the Service's endpoints as ready on the given nodes,
// as the EndpointSlice controller would for pods there.
func endpointsOn(t *testing.T, ns, svc string, nodes ...string) {
	t.Helper()
	eps := make([]framework.Endpoint, 0, len(nodes))
	for i, n := range nodes {
		eps = append(eps, framework.Endpoint{Address: fmt.Sprintf("198.19.%d.10", i), Node: n})
	}
	s := framework.EndpointSlice(ns, svc, "e2e", eps...)
	ctx := context.Background()
	_ = client.DiscoveryV1().EndpointSlices(ns).Delete(ctx, s.Name, metav1.DeleteOptions{})
	if _, err := client.DiscoveryV1().EndpointSlices(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
