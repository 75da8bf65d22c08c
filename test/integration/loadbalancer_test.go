package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/metal-ccm/metal-ccm/test/framework"
)

// lbConfig has pools of a test's own: the tests share one API server, and a
// Service whose CCM has stopped keeps its addresses.
func lbConfig(n int) string {
	return fmt.Sprintf(`loadBalancer:
  pools:
  - name: default
    addresses: [198.18.%d.0/29, "2001:db8:%d::/125"]
  - name: tiny
    autoAssign: false
    addresses: [198.18.%d.1-198.18.%d.2]
`, n, n, n+1, n+1)
}

// newNamespace creates a namespace for one test. At the end it deletes the
// namespace's Services and waits until the running CCM has released them
// (call it after startCCM, so that this runs first), then the namespace.
func newNamespace(t *testing.T) string {
	t.Helper()
	return framework.NewNamespace(t, client, framework.NamespaceName(t), framework.ReleaseServices(30*time.Second))
}

// createLB creates a LoadBalancer Service of the test.
func createLB(t *testing.T, ns, name string, opts ...framework.ServiceOption) *v1.Service {
	t.Helper()
	return framework.CreateLoadBalancer(t, client, ns, name, opts...)
}

// waitIPs waits until the Service's status has n addresses and returns them.
func waitIPs(t *testing.T, ns, name string, n int, timeout time.Duration) []string {
	t.Helper()
	return framework.WaitIngressIPs(t, client, ns, name, n, timeout)
}

// waitEvent waits for an Event with reason on the Service.
func waitEvent(t *testing.T, ns, name, reason string) v1.Event {
	t.Helper()
	return framework.WaitObjectEvent(t, client, ns, name, reason, 20*time.Second)
}

func TestLoadBalancerAllocation(t *testing.T) {
	startCCM(t, framework.CCMOptions{CloudConfig: writeConfig(t, lbConfig(100))})
	ns := newNamespace(t)

	single := waitIPs(t, ns, createLB(t, ns, "single").Name, 1, 20*time.Second)
	if !strings.HasPrefix(single[0], "198.18.100.") {
		t.Errorf("single-stack address %v", single)
	}
	dual := waitIPs(t, ns, createLB(t, ns, "dual", framework.DualStack).Name, 2, 20*time.Second)
	if !strings.HasPrefix(dual[0], "198.18.100.") || !strings.HasPrefix(dual[1], "2001:db8:100::") {
		t.Errorf("dual-stack addresses %v", dual)
	}
	req := waitIPs(t, ns, createLB(t, ns, "requested", framework.WithAnnotation("metal-ccm.io/load-balancer-ips", "198.18.101.2"),
		framework.WithAnnotation("metal-ccm.io/pool", "tiny")).Name, 1, 20*time.Second)
	if req[0] != "198.18.101.2" {
		t.Errorf("requested address not given: %v", req)
	}
	// Sharing: same key, different ports.
	s1 := waitIPs(t, ns, createLB(t, ns, "share-udp", framework.WithAnnotation("metal-ccm.io/sharing-key", "dns"), framework.WithPort(v1.ProtocolUDP, 53)).Name, 1, 20*time.Second)
	s2 := waitIPs(t, ns, createLB(t, ns, "share-tcp", framework.WithAnnotation("metal-ccm.io/sharing-key", "dns"), framework.WithPort(v1.ProtocolTCP, 53)).Name, 1, 20*time.Second)
	if s1[0] != s2[0] {
		t.Errorf("sharing key ignored: %v %v", s1, s2)
	}
	// Another implementation's class is left alone.
	createLB(t, ns, "other-class", func(s *v1.Service) { s.Spec.LoadBalancerClass = ptr.To("example.com/other") })

	// Refusals, each with its Event.
	for _, tc := range []struct {
		name, reason string
		opts         []framework.ServiceOption
	}{
		{"outside", "IPNotInPool", []framework.ServiceOption{framework.WithAnnotation("metal-ccm.io/load-balancer-ips", "198.18.150.1")}},
		{"taken", "IPInUse", []framework.ServiceOption{framework.WithAnnotation("metal-ccm.io/load-balancer-ips", "198.18.101.2")}},
		{"garbage", "InvalidAnnotation", []framework.ServiceOption{framework.WithAnnotation("metal-ccm.io/load-balancer-ips", "not-an-ip")}},
		{"no-pool", "UnknownPool", []framework.ServiceOption{framework.WithAnnotation("metal-ccm.io/pool", "nope")}},
		{"clash", "SharingClash", []framework.ServiceOption{framework.WithAnnotation("metal-ccm.io/sharing-key", "dns"), framework.WithPort(v1.ProtocolUDP, 53),
			framework.WithAnnotation("metal-ccm.io/load-balancer-ips", s1[0])}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			createLB(t, ns, tc.name, tc.opts...)
			ev := waitEvent(t, ns, tc.name, tc.reason)
			if ev.Type != v1.EventTypeWarning {
				t.Errorf("event type %s", ev.Type)
			}
		})
	}
	s, err := client.CoreV1().Services(ns).Get(context.Background(), "other-class", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Status.LoadBalancer.Ingress) != 0 || slices.Contains(s.Finalizers, "service.kubernetes.io/load-balancer-cleanup") {
		t.Errorf("a Service of another class was touched: %+v", s.Status)
	}
	// Nothing else was disturbed by the refusals.
	if got := waitIPs(t, ns, "single", 1, time.Second); got[0] != single[0] {
		t.Errorf("address of single changed: %v -> %v", single, got)
	}
}

func TestPoolExhaustionThenFreedAddress(t *testing.T) {
	startCCM(t, framework.CCMOptions{CloudConfig: writeConfig(t, lbConfig(110))})
	ns := newNamespace(t)
	tiny := framework.WithAnnotation("metal-ccm.io/pool", "tiny")
	waitIPs(t, ns, createLB(t, ns, "a", tiny).Name, 1, 20*time.Second)
	waitIPs(t, ns, createLB(t, ns, "b", tiny).Name, 1, 20*time.Second)
	createLB(t, ns, "c", tiny)
	waitEvent(t, ns, "c", "PoolExhausted")
	// Let the service controller's retry backoff grow past what the test waits.
	time.Sleep(6 * time.Second)
	if err := client.CoreV1().Services(ns).Delete(context.Background(), "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	waitIPs(t, ns, "c", 1, 5*time.Second)
	t.Logf("pending Service assigned %s after an address was freed", time.Since(start).Round(time.Millisecond))
}

func TestHandWrittenDuplicateIsFixedOnTheNewerService(t *testing.T) {
	startCCM(t, framework.CCMOptions{CloudConfig: writeConfig(t, lbConfig(120))})
	ns := newNamespace(t)
	older := waitIPs(t, ns, createLB(t, ns, "older").Name, 1, 20*time.Second)
	time.Sleep(1100 * time.Millisecond) // creation timestamps have second resolution
	newer := createLB(t, ns, "newer", framework.WithAnnotation("metal-ccm.io/pool", "tiny"))
	waitIPs(t, ns, newer.Name, 1, 20*time.Second)
	// Write the older Service's address into the newer one's status by hand.
	s, err := client.CoreV1().Services(ns).Get(context.Background(), "newer", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: older[0]}}
	if _, err := client.CoreV1().Services(ns).UpdateStatus(context.Background(), s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, ns, "newer", "IPConflict")
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		s, err := client.CoreV1().Services(ns).Get(ctx, "newer", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		ips := framework.IngressIPs(s)
		return len(ips) == 1 && ips[0] != older[0], nil
	})
	if err != nil {
		t.Fatalf("the newer Service kept the duplicate address: %v", err)
	}
	o, err := client.CoreV1().Services(ns).Get(context.Background(), "older", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := framework.IngressIPs(o); len(got) != 1 || got[0] != older[0] {
		t.Errorf("the older Service was touched: %v -> %v", older, got)
	}
}

func TestParallelWorkersNeverDuplicate(t *testing.T) {
	startCCM(t, framework.CCMOptions{CloudConfig: writeConfig(t, `loadBalancer:
  pools:
  - name: big
    addresses: [198.18.104.0/24]
`), Args: []string{"--concurrent-service-syncs", "10"}})
	ns := newNamespace(t)
	const n = 60
	for i := range n {
		createLB(t, ns, fmt.Sprintf("p-%02d", i))
	}
	seen := map[string]string{}
	for i := range n {
		name := fmt.Sprintf("p-%02d", i)
		ip := waitIPs(t, ns, name, 1, 60*time.Second)[0]
		if other, dup := seen[ip]; dup {
			t.Errorf("%s and %s both have %s", name, other, ip)
		}
		seen[ip] = name
	}
}
