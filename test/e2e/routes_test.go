package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// podCIDRs of lab node i, as an installer (or kube-controller-manager's
// allocator) would set them.
func podCIDRs(i int) (netip.Prefix, netip.Prefix) {
	return netip.MustParsePrefix(fmt.Sprintf("198.19.%d.0/24", i)), netip.MustParsePrefix(fmt.Sprintf("2001:db8:19:%d::/64", i))
}

// TestPodRoutesWithoutOverlay: the route controller and the Routes interface
// make the router route each node's pod CIDRs to the node.
func TestPodRoutesWithoutOverlay(t *testing.T) {
	lab := netlab.New(t, netlab.Options{Nodes: 3, Speakers: 1})
	registerLabNodes(t, lab)
	ctx := context.Background()
	for i := range lab.Nodes {
		p4, p6 := podCIDRs(i)
		n, err := client.CoreV1().Nodes().Get(ctx, lab.NodeName(i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Spec.PodCIDR, n.Spec.PodCIDRs = p4.String(), []string{p4.String(), p6.String()}
		if _, err := client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cfg := ccmConfig(t, lab, 0, "198.18.120.0/24", "2001:db8:120::/120")
	data, err := os.ReadFile(cfg) //nolint:gosec // written by ccmConfig in the test's temporary folder
	if err != nil {
		t.Fatal(err)
	}
	cfg = filepath.Join(t.TempDir(), "routes.yaml")
	if err := os.WriteFile(cfg, append(data, []byte("routes:\n  enabled: true\n")...), 0o600); err != nil { //nolint:gosec // in the test's temporary folder
		t.Fatal(err)
	}
	cp.StartCCMForTest(t, framework.CCMOptions{Name: "ccm-routes", CloudConfig: cfg, Args: []string{
		"--leader-elect-resource-name", "e2e-routes", "--cluster-cidr", "198.19.0.0/16,2001:db8:19::/56",
		"--allocate-node-cidrs=false", "--configure-cloud-routes=true", "--route-reconciliation-period", "2s",
	}})
	v4 := lab.NodeAddrs(netlab.IPv4)
	waitPodRoutes(t, lab)
	t.Run("NetworkUnavailable is False once routed", func(t *testing.T) {
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			for i := range lab.Nodes {
				n, err := client.CoreV1().Nodes().Get(ctx, lab.NodeName(i), metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				ok := false
				for _, cond := range n.Status.Conditions {
					ok = ok || (cond.Type == v1.NodeNetworkUnavailable && cond.Status == v1.ConditionFalse)
				}
				if !ok {
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			t.Errorf("NetworkUnavailable not False on every node: %v", err)
		}
	})
	t.Run("a node without an address to route to keeps NetworkUnavailable True", func(t *testing.T) {
		n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "no-address"}, Spec: v1.NodeSpec{
			PodCIDR: "198.19.9.0/24", PodCIDRs: []string{"198.19.9.0/24"}}}
		if _, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = client.CoreV1().Nodes().Delete(context.Background(), "no-address", metav1.DeleteOptions{}) })
		var cond v1.NodeCondition
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			n, err := client.CoreV1().Nodes().Get(ctx, "no-address", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range n.Status.Conditions {
				if c.Type == v1.NodeNetworkUnavailable {
					cond = c
					return c.Status == v1.ConditionTrue, nil
				}
			}
			return false, nil
		})
		if err != nil || cond.Reason == "" {
			t.Errorf("NetworkUnavailable: %+v, %v", cond, err)
		}
		t.Logf("NetworkUnavailable=%s reason %s: %s", cond.Status, cond.Reason, cond.Message)
		if r, found, _ := lab.Route(netip.MustParsePrefix("198.19.9.0/24")); found {
			t.Errorf("a route without a next hop reached the router: %v", r)
		}
	})
	t.Run("pod to pod through the router, IPv4 and IPv6", func(t *testing.T) {
		for _, f := range []netlab.Family{netlab.IPv4, netlab.IPv6} {
			src, dst := podAddr(0, f), podAddr(1, f)
			if err := lab.AddLoopbackVIP(0, src); err != nil {
				t.Fatal(err)
			}
			if err := lab.AddLoopbackVIP(1, dst); err != nil {
				t.Fatal(err)
			}
			if err := lab.ServeHTTP(1, netip.AddrPortFrom(dst, 8080).String()); err != nil {
				t.Fatal(err)
			}
			// From node 0's pod address: the reply goes back through the router too.
			out, err := lab.Exec(lab.Nodes[0], "curl", "-sS", "--max-time", "5", "--interface", src.String(),
				"http://"+netip.AddrPortFrom(dst, 8080).String()+"/")
			if err != nil || out != lab.NodeName(1) {
				t.Errorf("%s -> %s: %q, %v", src, dst, out, err)
			}
		}
	})
	t.Run("a router restart brings every route back", func(t *testing.T) {
		if err := lab.RestartRouter(); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		waitPodRoutes(t, lab)
		t.Logf("all routes back %s after the router restarted", time.Since(start).Round(time.Millisecond))
	})
	t.Run("removing a node removes its routes", func(t *testing.T) {
		if err := client.CoreV1().Nodes().Delete(ctx, lab.NodeName(2), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		p4, p6 := podCIDRs(2)
		waitPrefix(t, lab, p4)
		waitPrefix(t, lab, p6)
		p4, _ = podCIDRs(1)
		waitPrefix(t, lab, p4, v4[1])
	})
}

// podAddr is the first address of node i's pod CIDR of family f.
func podAddr(i int, f netlab.Family) netip.Addr {
	p4, p6 := podCIDRs(i)
	if f == netlab.IPv4 {
		return p4.Addr().Next()
	}
	return p6.Addr().Next()
}

// waitPodRoutes waits until the router routes each node's pod CIDRs, IPv4
// and IPv6, to the node.
func waitPodRoutes(t *testing.T, lab *netlab.Lab) {
	t.Helper()
	v4, v6 := lab.NodeAddrs(netlab.IPv4), lab.NodeAddrs(netlab.IPv6)
	for i := range lab.Nodes {
		p4, p6 := podCIDRs(i)
		waitPrefix(t, lab, p4, v4[i])
		waitPrefix(t, lab, p6, v6[i])
	}
}
