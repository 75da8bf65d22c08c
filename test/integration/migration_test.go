package integration

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metal-ccm/metal-ccm/test/framework"
)

// TestMigrationKeepsAddresses adopts Services whose status already holds
// addresses assigned by another implementation: after the switch no address
// changes, addresses outside the pools are reported with an Event, and the
// adopted addresses are never handed to another Service.
func TestMigrationKeepsAddresses(t *testing.T) {
	ns := framework.NewNamespace(t, client, "migration")
	// What the previous implementation left: Services with addresses in
	// their status, one inside the new pool, one outside every pool.
	adopted := map[string]string{"in-pool": "198.18.140.1", "outside": "198.18.149.9"}
	for name, ip := range adopted {
		createLB(t, ns, name)
		s, err := client.CoreV1().Services(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: ip}}
		if _, err := client.CoreV1().Services(ns).UpdateStatus(context.Background(), s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The pool holds exactly two addresses: .1 is adopted, so a new Service
	// must get .2 and a third must wait.
	startCCM(t, framework.CCMOptions{CloudConfig: writeConfig(t, `loadBalancer:
  pools:
  - {name: default, addresses: [198.18.140.1-198.18.140.2]}
`)})
	t.Cleanup(func() {
		for _, name := range []string{"in-pool", "outside", "new", "third"} {
			_ = client.CoreV1().Services(ns).Delete(context.Background(), name, metav1.DeleteOptions{})
		}
	})
	waitEvent(t, ns, "outside", "AddressOutsidePools")
	if got := waitIPs(t, ns, createLB(t, ns, "new").Name, 1, 20*time.Second); got[0] != "198.18.140.2" {
		t.Errorf("new Service got %v, want the one free address 198.18.140.2", got)
	}
	createLB(t, ns, "third")
	waitEvent(t, ns, "third", "PoolExhausted")
	for name, ip := range adopted {
		s, err := client.CoreV1().Services(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := framework.IngressIPs(s); len(got) != 1 || got[0] != ip {
			t.Errorf("%s: address changed from %s to %v", name, ip, got)
		}
		hasFinalizer := false
		for _, f := range s.Finalizers {
			hasFinalizer = hasFinalizer || f == "service.kubernetes.io/load-balancer-cleanup"
		}
		if !hasFinalizer {
			t.Errorf("%s was not adopted (no cleanup finalizer)", name)
		}
	}
}
