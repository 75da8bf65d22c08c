package e2e

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metal-ccm/metal-ccm/pkg/svcstatus"
	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// outsideAddr is in none of the tests' pools: whoever writes it into a
// Service's status must not make the cluster announce it.
var outsideAddr = netip.MustParseAddr("198.18.99.99")

// TestOnlyPoolAddressesAreAnnounced writes an address in no pool into a
// served Service's status, as anyone allowed to write services/status
// could: the replica withdraws the Service's old address (so it followed
// the write) and never announces the new one to BIRD or FRR; the leader
// warns on the Service, its Announced condition says why, and the replica's
// metric counts the address.
func TestOnlyPoolAddressesAreAnnounced(t *testing.T) {
	eachRouter(t, 1, func(t *testing.T, lab *netlab.Lab, router netlab.RouterKind) {
		ccm := startReplica(t, lab, 0, "e2e-outside-"+strings.ToLower(string(router)), "198.18.104.0/24", "2001:db8:104::/120")
		waitEstablished(t, lab, sessionTimeout, lab.SpeakerAddrs(netlab.IPv4)[0])
		ns := framework.NewNamespace(t, client, framework.NamespaceName(t), framework.ReleaseServices(30*time.Second))
		svc := framework.CreateLoadBalancer(t, client, ns, "web")
		vip := waitVIPs(t, ns, "web", 1)[0]
		waitRoute(t, lab, vip, lab.NodeAddrs(netlab.IPv4)...)

		setIngress(t, svc, []netip.Addr{outsideAddr})
		waitRoute(t, lab, vip)
		stayWithout(t, lab, outsideAddr)
		framework.WaitObjectEvent(t, client, ns, "web", "AddressOutsidePools", 30*time.Second)
		framework.WaitServiceCondition(t, client, ns, "web", svcstatus.TypeAnnounced, metav1.ConditionFalse, svcstatus.ReasonOutsidePools, 30*time.Second)
		m, err := cp.Metrics(context.Background(), ccm)
		if err != nil {
			t.Fatal(err)
		}
		if want := "metal_ccm_addresses_outside_pools 1"; !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
		// Still never announced once the leader has seen and kept it.
		stayWithout(t, lab, outsideAddr)
	})
}
