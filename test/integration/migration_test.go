package integration

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

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

// TestMigrationHonoursMetalLBAnnotations: Services that MetalLB served keep
// what its annotations asked for when metal-ccm takes over: two Services
// sharing one address through allow-shared-ip keep it (no IPConflict), a
// Service asking for an address with loadBalancerIPs gets it, and one naming
// a pool with address-pool gets its address from that pool.
func TestMigrationHonoursMetalLBAnnotations(t *testing.T) {
	ns := framework.NewNamespace(t, client, "metallb-migration")
	shared := "198.18.141.1"
	for _, s := range []struct {
		name     string
		protocol v1.Protocol
		key      string
	}{{"dns-udp", v1.ProtocolUDP, "metallb.io/allow-shared-ip"}, {"dns-tcp", v1.ProtocolTCP, "metallb.universe.tf/allow-shared-ip"}} {
		createLB(t, ns, s.name, framework.WithPort(s.protocol, 53), framework.WithAnnotation(s.key, "dns"))
		svc, err := client.CoreV1().Services(ns).Get(context.Background(), s.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		svc.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: shared}}
		if _, err := client.CoreV1().Services(ns).UpdateStatus(context.Background(), svc, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	startCCM(t, framework.CCMOptions{CloudConfig: writeConfig(t, `loadBalancer:
  pools:
  - {name: default, addresses: [198.18.141.0/29]}
  - {name: other, addresses: [198.18.142.0/29], autoAssign: false}
`)})
	asked := createLB(t, ns, "asked", framework.WithAnnotation("metallb.universe.tf/loadBalancerIPs", "198.18.141.5"))
	pooled := createLB(t, ns, "pooled", framework.WithAnnotation("metallb.io/address-pool", "other"))
	if got := waitIPs(t, ns, asked.Name, 1, 20*time.Second); got[0] != "198.18.141.5" {
		t.Errorf("the Service asking with metallb.universe.tf/loadBalancerIPs got %v, want 198.18.141.5", got)
	}
	if got := waitIPs(t, ns, pooled.Name, 1, 20*time.Second); !strings.HasPrefix(got[0], "198.18.142.") {
		t.Errorf("the Service naming metallb.io/address-pool other got %v, want an address of that pool", got)
	}
	for _, name := range []string{"dns-udp", "dns-tcp"} {
		// Served: the service controller wrote its finalizer.
		var s *v1.Service
		err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
			got, err := client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil //nolint:nilerr // keep polling
			}
			s = got
			return slices.Contains(got.Finalizers, "service.kubernetes.io/load-balancer-cleanup"), nil
		})
		if err != nil {
			t.Fatalf("%s not served within 20s (finalizers %v)", name, s.Finalizers)
		}
		if got := framework.IngressIPs(s); len(got) != 1 || got[0] != shared {
			t.Errorf("%s: address changed from %s to %v", name, shared, got)
		}
		for _, e := range objectEvents(context.Background(), t, "Service", ns, name) {
			if e.Reason == "IPConflict" {
				t.Errorf("%s: %s %s", name, e.Reason, e.Message)
			}
		}
	}
}
