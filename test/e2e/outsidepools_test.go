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

// outsideAddr and writtenAddr are in none of the tests' pools: whoever
// writes them into a Service's status must not make the cluster announce
// them.
var (
	outsideAddr = netip.MustParseAddr("198.18.99.99")
	writtenAddr = netip.MustParseAddr("198.18.99.98")
)

// TestOnlyPoolAddressesAreAnnounced: a Service left by another
// implementation with an address in no pool keeps it, but no replica
// announces it to BIRD or FRR; the leader warns on the Service, its
// Announced condition says why and the replica's metric counts it. An
// address in no pool written over a served Service's own (as anyone allowed
// to write services/status could) is never announced either: the leader
// warns, and sets the Service's own address back (routed again) or keeps
// the written one (not routed), as the allocator's record says. Then, in
// the same lab, replicaPeers: replicas whose only peer is the router's
// IPv6 address, then the router by interface (BGP unnumbered).
func TestOnlyPoolAddressesAreAnnounced(t *testing.T) {
	eachRouter(t, replicaPeersOptions, func(t *testing.T, lab *netlab.Lab, router netlab.RouterKind) {
		ns := framework.NewNamespace(t, client, framework.NamespaceName(t))
		// Before the replica starts, as a migration leaves it.
		adopted := framework.CreateLoadBalancer(t, client, ns, "adopted")
		setIngress(t, adopted, []netip.Addr{outsideAddr})
		lease, pool4, pool6 := "e2e-outside-"+strings.ToLower(string(router)), "198.18.104.0/24", "2001:db8:104::/120"
		ccm := startReplica(t, lab, 0, lease, pool4, pool6)
		framework.ReleaseAtEnd(t, client, ns, 30*time.Second)
		waitEstablished(t, lab, sessionTimeout, lab.SpeakerAddrs(netlab.IPv4)[0])
		svc := framework.CreateLoadBalancer(t, client, ns, "web")
		vip := waitVIPs(t, ns, "web", 1)[0]
		waitRoute(t, lab, vip, lab.NodeAddrs(netlab.IPv4)...)

		framework.WaitObjectEvent(t, client, ns, "adopted", "AddressOutsidePools", 30*time.Second)
		framework.WaitServiceCondition(t, client, ns, "adopted", svcstatus.TypeAnnounced, metav1.ConditionFalse, svcstatus.ReasonOutsidePools, 30*time.Second)
		stayWithout(t, lab, outsideAddr)
		m, err := cp.Metrics(context.Background(), ccm)
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := framework.MetricValue(m, "metal_ccm_addresses_outside_pools"); !ok || v < 1 {
			t.Errorf("metal_ccm_addresses_outside_pools = %v (found %v), want at least 1", v, ok)
		}

		setIngress(t, svc, []netip.Addr{writtenAddr})
		framework.WaitObjectEvent(t, client, ns, "web", "AddressOutsidePools", 30*time.Second)
		stayWithout(t, lab, writtenAddr)
		// The status is the allocator's record: the leader either sets
		// its own address back or keeps the written one (as adopted).
		// Either way only a pool address is routed.
		switch got := waitVIPs(t, ns, "web", 1)[0]; got {
		case vip:
			waitRoute(t, lab, vip, lab.NodeAddrs(netlab.IPv4)...)
		case writtenAddr:
			waitRoute(t, lab, vip)
		default:
			t.Errorf("the status shows %s, want %s or %s", got, vip, writtenAddr)
		}
		if t.Failed() {
			return
		}
		// The same lab, for the replicas' IPv6-only and unnumbered peers.
		replicaPeers(t, lab, ccm, ns, lease, pool4, pool6)
	})
}
