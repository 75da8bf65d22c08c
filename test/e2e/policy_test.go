package e2e

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// policyConfig is a replica's cloud-config with routing policy: the router's
// first address is the eBGP "edge" (both families, label role=edge), its
// second the iBGP "core" (IPv4). Pool public goes to both with different
// attributes, internal to core only, agg to edge as a /24 aggregate alone
// and to core as host routes and the aggregate.
func policyConfig(lab *netlab.Lab) string {
	s4, s6 := lab.SpeakerAddrs(netlab.IPv4)[0], lab.SpeakerAddrs(netlab.IPv6)[0]
	return fmt.Sprintf(`apiVersion: metal-ccm.io/v1alpha1
kind: CloudConfig
healthChecks: {enabled: false}
loadBalancer:
  pools:
  - name: public
    addresses: [198.18.40.0/28, "2001:db8:40::/124"]
    bgpAdvertisements:
    - peerSelector: {matchLabels: {role: edge}}
      communities: ["65000:100", no-export]
      largeCommunities: ["64512:1:2"]
    - peers: [core]
      communities: ["65000:300"]
      localPreference: 250
    serviceCommunities: ["65000:200", "64512:9:9"]
  - name: internal
    addresses: [198.18.41.0/28]
    autoAssign: false
    bgpAdvertisements:
    - peers: [core]
  - name: agg
    addresses: [198.18.42.0/24]
    autoAssign: false
    bgpAdvertisements:
    - peers: [edge]
      aggregate: {ipv4Length: 24, only: true}
    - peers: [core]
      aggregate: {ipv4Length: 24}
bgp:
  asn: %[1]d
  peers:
  - {name: edge, address: %[2]s, asn: %[3]d, localAddress: %[4]s, holdTime: 9s, labels: {role: edge}}
  - {name: edge6, address: %[5]q, asn: %[3]d, localAddress: %[6]q, holdTime: 9s, labels: {role: edge}}
  - {name: core, address: %[7]s, port: %[8]d, asn: %[1]d, localAddress: %[4]s, holdTime: 9s}
`, lab.Opts.SpeakerASN, netlab.RouterAddr(netlab.IPv4), lab.Opts.RouterASN, s4,
		netlab.RouterAddr(netlab.IPv6), s6, netlab.SecondRouterAddr(netlab.IPv4), netlab.SecondRouterPort)
}

// TestRoutingPolicy: the real router's BGP table shows each pool's
// communities, large communities and local preference per peer, pools
// restricted to one peer reach only it, aggregates appear as configured,
// and a Service's annotation adds allowed communities while a disallowed
// one is refused with an Event.
func TestRoutingPolicy(t *testing.T) {
	// The lab's BIRD also holds the filters docs/loadbalancer.md gives.
	filters, err := netlab.DocBlock("loadbalancer.md", "<!-- policy:bird -->")
	if err != nil {
		t.Fatal(err)
	}
	lab := netlab.New(t, netlab.Options{Nodes: 2, Speakers: 1, SecondRouter: true, BirdExtra: filters})
	registerLabNodes(t, lab)
	cfgPath := filepath.Join(t.TempDir(), "cloud-config.yaml")
	if err := os.WriteFile(cfgPath, []byte(policyConfig(lab)), 0o600); err != nil {
		t.Fatal(err)
	}
	cp.StartCCMForTest(t, framework.CCMOptions{Name: "ccm-policy", CloudConfig: cfgPath,
		Args: []string{"--leader-elect-resource-name", "ccm-policy"}})
	ns := framework.NewNamespace(t, client, framework.NamespaceName(t))
	edge4, edge6, core4 := netlab.ProtocolName(netlab.IPv4, 0), netlab.ProtocolName(netlab.IPv6, 0), netlab.SecondProtocolName(netlab.IPv4, 0)
	hops4, hops6 := lab.NodeAddrs(netlab.IPv4), lab.NodeAddrs(netlab.IPv6)

	framework.CreateLoadBalancer(t, client, ns, "public", framework.DualStack,
		framework.WithAnnotation("metal-ccm.io/bgp-communities", "65000:200,64512:9:9"))
	framework.CreateLoadBalancer(t, client, ns, "internal", framework.WithAnnotation("metal-ccm.io/pool", "internal"))
	framework.CreateLoadBalancer(t, client, ns, "agg", framework.WithAnnotation("metal-ccm.io/pool", "agg"))
	framework.CreateLoadBalancer(t, client, ns, "refused", framework.WithAnnotation("metal-ccm.io/bgp-communities", "65000:200,65000:999"))
	pub := waitVIPs(t, ns, "public", 2)
	internal, agg, refused := waitVIPs(t, ns, "internal", 1)[0], waitVIPs(t, ns, "agg", 1)[0], waitVIPs(t, ns, "refused", 1)[0]
	aggPrefix := netip.MustParsePrefix("198.18.42.0/24")

	// BIRD gives the routes of its eBGP sessions its default local
	// preference, 100 (the speaker sends none to them); the iBGP session
	// gets the pool's, or the speaker's default 100.
	edgeAttrs := attrs{communities: "65000:100 65000:200 65535:65281", large: "64512:1:2 64512:9:9", localPref: 100}
	coreAttrs := attrs{communities: "65000:200 65000:300", large: "64512:9:9", localPref: 250}
	t.Run("communities, large communities and local preference per peer", func(t *testing.T) {
		wantRoutes(t, lab, netlab.HostPrefix(pub[0]), map[string]attrs{edge4: edgeAttrs, core4: coreAttrs}, hops4)
		wantRoutes(t, lab, netlab.HostPrefix(pub[1]), map[string]attrs{edge6: edgeAttrs}, hops6)
	})
	t.Run("the docs' BIRD filters match on the communities", func(t *testing.T) {
		// from_cluster prefers what is tagged 65000:300 (core's paths).
		preferred := coreAttrs
		preferred.localPref = 300
		wantFiltered(t, lab, netlab.HostPrefix(pub[0]), "from_cluster", map[string]attrs{edge4: edgeAttrs, core4: preferred}, hops4)
		// to_upstream passes what is tagged 65000:100 (edge's paths), and
		// tags 65000:999 what the Service tagged 64512:9:9.
		upstream := edgeAttrs
		upstream.communities = "65000:100 65000:200 65000:999 65535:65281"
		wantFiltered(t, lab, netlab.HostPrefix(pub[0]), "to_upstream", map[string]attrs{edge4: upstream}, hops4)
		wantFiltered(t, lab, netlab.HostPrefix(internal), "to_upstream", nil, nil)
	})
	t.Run("a pool sent to one peer only", func(t *testing.T) {
		wantRoutes(t, lab, netlab.HostPrefix(internal), map[string]attrs{core4: {localPref: 100}}, hops4)
	})
	t.Run("aggregate instead of the addresses, and also", func(t *testing.T) {
		wantRoutes(t, lab, aggPrefix, map[string]attrs{edge4: {localPref: 100}, core4: {localPref: 100}}, hops4)
		wantRoutes(t, lab, netlab.HostPrefix(agg), map[string]attrs{core4: {localPref: 100}}, hops4)
	})
	t.Run("a disallowed community is refused with an Event", func(t *testing.T) {
		ev := framework.WaitObjectEvent(t, client, ns, "refused", "CommunityNotAllowed", 30*time.Second)
		if !strings.Contains(ev.Message, "65000:999") || ev.Type != "Warning" {
			t.Errorf("Event %s: %q", ev.Type, ev.Message)
		}
		// Announced with the pool's attributes alone.
		wantRoutes(t, lab, netlab.HostPrefix(refused), map[string]attrs{
			edge4: {communities: "65000:100 65535:65281", large: "64512:1:2", localPref: 100},
			core4: {communities: "65000:300", localPref: 250},
		}, hops4)
	})
	t.Run("changing the annotation changes the paths", func(t *testing.T) {
		patch := []byte(`{"metadata":{"annotations":{"metal-ccm.io/bgp-communities":"65000:200"}}}`)
		if _, err := client.CoreV1().Services(ns).Patch(context.Background(), "public", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		wantRoutes(t, lab, netlab.HostPrefix(pub[0]), map[string]attrs{
			edge4: {communities: "65000:100 65000:200 65535:65281", large: "64512:1:2", localPref: 100},
			core4: {communities: "65000:200 65000:300", localPref: 250},
		}, hops4)
	})
	t.Run("the aggregate follows the addresses it covers", func(t *testing.T) {
		if err := client.CoreV1().Services(ns).Delete(context.Background(), "agg", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		wantRoutes(t, lab, aggPrefix, nil, nil)
	})
}

// attrs are what a route is expected to carry (communities and large
// communities space-separated and sorted as BIRD shows them).
type attrs struct {
	communities, large string
	localPref          int
}

// wantRoutes waits until BIRD holds for prefix exactly one route per next
// hop from each protocol of want, each with its attributes, and none from
// other protocols.
func wantRoutes(t *testing.T, lab *netlab.Lab, prefix netip.Prefix, want map[string]attrs, hops []netip.Addr) {
	t.Helper()
	wantFiltered(t, lab, prefix, "", want, hops)
}

// wantFiltered is wantRoutes for the routes that BIRD's filter accepts
// ("": all), as it changed them.
func wantFiltered(t *testing.T, lab *netlab.Lab, prefix netip.Prefix, filter string, want map[string]attrs, hops []netip.Addr) {
	t.Helper()
	var last string
	deadline := time.Now().Add(30 * time.Second)
	for {
		routes, err := lab.BirdRoutes(prefix, filter)
		if err != nil {
			t.Fatal(err)
		}
		last = describeRoutes(routes)
		if routesMatch(routes, want, hops) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s (filter %q): BIRD has\n%s\nwant from each of %v one route per next hop %v with %+v", prefix, filter, last, slices.Sorted(maps.Keys(want)), hops, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func routesMatch(routes []netlab.BirdRoute, want map[string]attrs, hops []netip.Addr) bool {
	if len(routes) != len(want)*len(hops) {
		return false
	}
	for _, r := range routes {
		w, ok := want[r.Protocol]
		if !ok || !slices.Contains(hops, r.NextHop) {
			return false
		}
		got := attrs{communities: joinSorted(r.Communities), large: joinSorted(r.LargeCommunities), localPref: r.LocalPref}
		if got != w {
			return false
		}
	}
	return true
}

func describeRoutes(routes []netlab.BirdRoute) string {
	var b strings.Builder
	for _, r := range routes {
		fmt.Fprintf(&b, "  %s via %s communities %v large %v local_pref %d\n", r.Protocol, r.NextHop, r.Communities, r.LargeCommunities, r.LocalPref)
	}
	return b.String()
}

func joinSorted(s []string) string { return strings.Join(slices.Sorted(slices.Values(s)), " ") }
