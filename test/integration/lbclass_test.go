package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/metal-ccm/metal-ccm/test/framework"
)

const lbFinalizer = "service.kubernetes.io/load-balancer-cleanup"

// withClass sets spec.loadBalancerClass.
func withClass(class string) framework.ServiceOption {
	return func(s *v1.Service) { s.Spec.LoadBalancerClass = ptr.To(class) }
}

// classConfig serves class (and the Services without one with
// serveDefault) from a pool 198.18.<n>.0/29 of its own.
func classConfig(class string, serveDefault bool, n int) string {
	return fmt.Sprintf("loadBalancer:\n  class: %s\n  serveDefaultClass: %t\n  pools:\n  - name: p\n    addresses: [198.18.%d.0/29]\n", class, serveDefault, n)
}

// TestLoadBalancerClass runs two implementations side by side, as two CCMs
// of two classes, one of which also serves the Services without a class:
// each serves the Services of its class from its own pool, a Service of a
// third class is touched by neither (no status, no finalizer, no Event,
// also when it is deleted holding the cleanup finalizer its own
// implementation would put), and a Service without a class is served only
// by the one with serveDefaultClass.
func TestLoadBalancerClass(t *testing.T) {
	const classX, classY = "metal-ccm.io/x", "metal-ccm.io/y"
	ctx := context.Background()
	lease := strings.ToLower(t.Name())
	startCCM(t, framework.CCMOptions{Name: "ccm-class-x", CloudConfig: writeConfig(t, classConfig(classX, false, 170)),
		Args: []string{"--leader-elect-resource-name", lease + "-x"}})
	ns := newNamespace(t)

	// Only x runs: the Services created before its own are seen first by
	// its informer, so that once its own has an address, x has passed over
	// them.
	createLB(t, ns, "other", withClass("example.com/other"))
	createLB(t, ns, "classless")
	createLB(t, ns, "y", withClass(classY))
	createLB(t, ns, "x", withClass(classX))
	x := waitIPs(t, ns, "x", 1, 20*time.Second)
	inPool(t, "x", x, "198.18.170.")
	untouched(ctx, t, ns, "other", "classless", "y")

	startCCM(t, framework.CCMOptions{Name: "ccm-class-y", CloudConfig: writeConfig(t, classConfig(classY, true, 171)),
		Args: []string{"--leader-elect-resource-name", lease + "-y"}})
	inPool(t, "y", waitIPs(t, ns, "y", 1, 20*time.Second), "198.18.171.")
	inPool(t, "classless", waitIPs(t, ns, "classless", 1, 20*time.Second), "198.18.171.")
	untouched(ctx, t, ns, "other")
	// Served by x alone: its address and its one Event stay as they were.
	if got := waitIPs(t, ns, "x", 1, time.Second); got[0] != x[0] {
		t.Errorf("the address of x changed with y running: %v -> %v", x, got)
	}
	if n := countReason(objectEvents(ctx, t, "Service", ns, "x"), "EnsuredLoadBalancer"); n != 1 {
		t.Errorf("x has %d EnsuredLoadBalancer Events, want 1", n)
	}

	// The third class's Service, deleted holding the cleanup finalizer:
	// neither CCM may clean it up. Each CCM has passed over its deletion
	// once it has cleaned up a Service of its own deleted after it.
	other, err := client.CoreV1().Services(ns).Get(ctx, "other", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	other.Finalizers = append(other.Finalizers, lbFinalizer)
	if _, err := client.CoreV1().Services(ns).Update(ctx, other, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// (y, started after the namespace, stops before its cleanup: its
	// Services are released here.)
	for _, name := range []string{"other", "x", "y", "classless"} {
		if err := client.CoreV1().Services(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"x", "y", "classless"} {
		waitGone(ctx, t, ns, name)
	}
	other, err = client.CoreV1().Services(ns).Get(ctx, "other", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Service of the third class is gone: its finalizer was removed: %v", err)
	}
	untouched(ctx, t, ns, "other")
	other.Finalizers = slices.DeleteFunc(other.Finalizers, func(f string) bool { return f == lbFinalizer })
	if _, err := client.CoreV1().Services(ns).Update(ctx, other, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// inPool fails the test unless every address starts with prefix.
func inPool(t *testing.T, name string, ips []string, prefix string) {
	t.Helper()
	for _, ip := range ips {
		if !strings.HasPrefix(ip, prefix) {
			t.Errorf("%s has %s, not from the pool %s*", name, ip, prefix)
		}
	}
}

// untouched fails the test if a Service has an address, the cleanup
// finalizer (of its own, when it is not being deleted) or any Event.
func untouched(ctx context.Context, t *testing.T, ns string, names ...string) {
	t.Helper()
	for _, name := range names {
		s, err := client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Status.LoadBalancer.Ingress) != 0 {
			t.Errorf("%s was given a status: %+v", name, s.Status.LoadBalancer)
		}
		if s.DeletionTimestamp == nil && slices.Contains(s.Finalizers, lbFinalizer) {
			t.Errorf("%s was given the finalizer", name)
		}
		for _, e := range objectEvents(ctx, t, "Service", ns, name) {
			t.Errorf("%s has an Event: %s %s: %s (from %s)", name, e.Type, e.Reason, e.Message, e.Source.Component)
		}
	}
}

// countReason counts the Events of reason, each as often as it was
// recorded (a recorder counts a repeated Event in the one it wrote).
func countReason(evs []v1.Event, reason string) int {
	n := 0
	for _, e := range evs {
		if e.Reason == reason {
			n += int(max(e.Count, 1))
		}
	}
	return n
}

// waitGone waits until the Service is deleted (its finalizer removed).
func waitGone(ctx context.Context, t *testing.T, ns, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("%s/%s was not cleaned up and deleted: %v", ns, name, err)
	}
}
