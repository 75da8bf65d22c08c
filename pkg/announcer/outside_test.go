package announcer

import (
	"context"
	"net/netip"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

// An address outside the announcer's pools is neither announced nor given
// communities, and is counted; one written into the status later is left
// out the same way; pod routes, in no pool, are not asked.
func TestAddressesOutsidePoolsAreNotAnnounced(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pool := netip.MustParsePrefix("198.18.100.0/24")
	n1 := node("n1", true, "198.18.10.11")
	n1.Spec.PodCIDRs = []string{"198.19.1.0/24"}
	cs := fake.NewClientset(n1, lbService("web", false, "198.18.100.1", "198.18.99.99"))
	sp := &fakeSpeaker{paths: map[netip.Prefix][]netip.Addr{}}
	f := informers.NewSharedInformerFactory(cs, 0)
	a := New(factoryInformers(f), sp, func(*v1.Service) bool { return true },
		Options{PodRoutes: true, Addresses: pool.Contains})
	f.Start(ctx.Done())
	go a.Run(ctx)

	eventually(t, "the pool's address and the pod route announced, one address left out", func() bool {
		return sp.get("198.18.100.1/32") == "[198.18.10.11]" && sp.get("198.19.1.0/24") == "[198.18.10.11]" && a.OutsidePools() == 1
	})
	if got := sp.get("198.18.99.99/32"); got != "[]" {
		t.Errorf("an address in no pool is announced: %s", got)
	}

	// A status rewritten to another address outside: still none announced.
	svc, err := cs.CoreV1().Services("ns").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: "198.18.99.1"}, {IP: "198.18.99.2"}, {IP: "198.18.100.1"}}
	if _, err := cs.CoreV1().Services("ns").UpdateStatus(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "two left out", func() bool { return a.OutsidePools() == 2 })
	for _, p := range []string{"198.18.99.1/32", "198.18.99.2/32", "198.18.99.99/32"} {
		if got := sp.get(p); got != "[]" {
			t.Errorf("%s announced: %s", p, got)
		}
	}
	if err := cs.CoreV1().Services("ns").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "none left out once the Service is gone", func() bool {
		return a.OutsidePools() == 0 && sp.get("198.18.100.1/32") == "[]"
	})
}
