package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// TestLeafSpineUnnumbered: both racks are unnumbered, each node on a link
// of its own to its ToR, the sessions between link-local addresses
// carrying the LoadBalancer address's IPv4 and IPv6 routes, both with the
// nodes' link-local addresses as next hops in the ToRs' kernels (IPv4
// through IPv6 next hops, RFC 8950), and the client behind the spine
// reaches the four nodes through them. Rack 1's FRR 8.4 ToR peers with its
// nodes by interface (neighbor IFACE interface), their real agents with a
// peer on their link (bgp.peers[].interface), the ToR found from its
// Router Advertisements. Rack 0's BIRD 2 ToR takes a session from any
// link-local address on each node link (a dynamic neighbor range per
// interface, extended next hop on the IPv4 channel) and sends Router
// Advertisements (radv); its agents peer with the gateway of their IPv6
// default route (bgp.peers[].defaultGateway), learned from those: a
// link-local session too. Every session has BFD (300 ms × 3) between the
// same link-local addresses, up at both ToRs and in the agents; a frozen
// agent's paths leave its ToR's kernel within about a second, in each
// rack.
func TestLeafSpineUnnumbered(t *testing.T) {
	start := time.Now()
	ls := netlab.NewLeafSpine(t, netlab.LeafSpineOptions{TorRouter: [2]netlab.RouterKind{netlab.RouterBIRD, netlab.RouterFRR},
		Unnumbered: [2]bool{true, true}, BFD: true})
	t.Logf("lab started in %s", time.Since(start).Round(time.Millisecond))
	ctx := context.Background()
	var where []agentPlace
	for rack := range 2 {
		for i := range ls.Racks[rack] {
			name := fmt.Sprintf("unnumbered-r%dn%d", rack, i)
			if _, err := framework.CreateReadyNode(ctx, client, name,
				netlab.LeafSpineNodeAddr(netlab.IPv4, rack, i).String(), netlab.LeafSpineNodeAddr(netlab.IPv6, rack, i).String()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
			patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, netlab.LeafSpineZoneLabel, netlab.LeafSpineZone(rack))
			if _, err := client.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			where = append(where, agentPlace{node: name, netns: ls.NodeNamespace(rack, i)})
		}
	}
	cfg := filepath.Join(t.TempDir(), "cloud-config.yaml")
	if err := os.WriteFile(cfg, []byte(ls.UnnumberedAgentCloudConfig(leafSpineHoldTime, "198.18.172.0/24", "2001:db8:172::/120")), 0o600); err != nil {
		t.Fatal(err)
	}
	cp.StartCCMForTest(t, framework.CCMOptions{Name: "ccm-unnumbered", CloudConfig: cfg,
		Args: []string{"--leader-elect-resource-name", "e2e-unnumbered", "--configure-cloud-routes=false"}})
	t.Logf("CCM started at %s", time.Since(start).Round(time.Millisecond))
	ns := framework.NewNamespace(t, client, framework.NamespaceName(t), framework.ReleaseServices(30*time.Second))
	agents := startAgentsIn(t, where, cfg)
	t.Logf("lab, CCM and agents started in %s", time.Since(start).Round(time.Millisecond))

	framework.CreateLoadBalancer(t, client, ns, "web", framework.DualStack)
	vips := waitVIPs(t, ns, "web", 2)
	for rack := range 2 {
		for i := range ls.Racks[rack] {
			if err := ls.ServeVIP(rack, i, vips...); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, vip := range vips {
		f := netlab.IPv4
		if vip.Is6() {
			f = netlab.IPv6
		}
		p := netlab.HostPrefix(vip)
		waitFrom := time.Now()
		wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		// Each node's path, its link-local address as next hop, for IPv4
		// too; the spine's, through both ToRs.
		for r := range 2 {
			if err := ls.WaitRoute(wctx, ls.Tors[r], p, ls.UnnumberedNodeLinkLocals(r)); err != nil {
				cancel()
				t.Fatalf("ToR %d: %v\n%s\n%s", r, err, unnumberedTorState(ls, r), ls.RouterLogs())
			}
			t.Logf("%s: both nodes' paths in ToR %d's kernel %s after the wait began", vip, r, time.Since(waitFrom).Round(time.Millisecond))
		}
		err := ls.WaitRoute(wctx, ls.Spine, p, []netip.Addr{netlab.LeafSpineTorUplinkAddr(f, 0), netlab.LeafSpineTorUplinkAddr(f, 1)})
		cancel()
		if err != nil {
			t.Fatalf("spine: %v", err)
		}
		seen, err := netlab.Answers(ctx, ls.ClientGet, netlab.VIPURL(vip), 60)
		if err != nil {
			t.Fatalf("requests to %s: %v", vip, err)
		}
		if seen["r0n0"] == 0 || seen["r0n1"] == 0 || seen["r1n0"] == 0 || seen["r1n1"] == 0 {
			t.Errorf("60 requests to %s reached %v, want all four nodes", vip, seen)
		}
	}
	// BIRD spawned one session per node link (the routes above came over
	// them, from the nodes' link-local addresses).
	states, err := ls.SessionStates(ls.Tors[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range ls.UnnumberedNodeLinkLocals(0) {
		if states[a] != "Established" {
			t.Errorf("ToR 0's session with %s: %q, want Established (all: %v)", a, states[a], states)
		}
	}
	testUnnumberedBFD(t, ls, agents, netlab.HostPrefix(vips[slices.IndexFunc(vips, netip.Addr.Is4)]))
}

// testUnnumberedBFD: each node's BFD session is up at its ToR, with the
// node's link-local address, and in its agent's metrics, with the ToR's
// (fe80::1 on the node's link); then in each rack node 1's agent is
// frozen, which only BFD sees within the hold time (the node's kernel
// keeps the TCP session open, and its link stays up: the ToR would see a
// link of its own go down at once), and its path of p leaves its ToR's
// kernel. agents are in the order of the racks' nodes.
func testUnnumberedBFD(t *testing.T, ls *netlab.LeafSpine, agents []*agent, p netip.Prefix) {
	ctx := context.Background()
	for r := range 2 {
		bctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := ls.WaitBFDUp(bctx, ls.Tors[r], ls.UnnumberedNodeLinkLocals(r)...)
		cancel()
		states, _ := ls.BFDStates(ls.Tors[r])
		if err != nil {
			t.Fatalf("ToR %d: BFD sessions with its nodes' link-local addresses not up: %v\n%s", r, err, ls.RouterLogs())
		}
		t.Logf("ToR %d's BFD sessions: %v", r, states)
		for i := range ls.Racks[r] {
			checkAgentBFDUp(t, ls, ls.NodeNamespace(r, i), fmt.Sprintf("rack %d node %d", r, i), "fe80::1%"+netlab.LeafSpineUnnumberedLink)
		}
	}
	// One rack after the other, each agent resumed at once: the first
	// one's session comes back while the second rack's is measured.
	frozen := map[int]bool{}
	resumed := map[int]time.Time{}
	for r := range 2 {
		k := r * len(ls.Racks[0]) // rack r's node 0
		all := ls.UnnumberedNodeLinkLocals(r)
		took, resume := bfdFailNode(t, ls, agents[k+1], r, 1, p, all[:1], false)
		frozen[k+1] = true
		t.Logf("rack %d (%s ToR): node 1's agent frozen, its path gone from the ToR's kernel after %.2fs (BFD 300ms × 3, hold time %s)",
			r, ls.Opts.TorRouter[r], took.Seconds(), leafSpineHoldTime)
		resume()
		resumed[r] = time.Now()
	}
	for r := range 2 {
		wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		err := ls.WaitRoute(wctx, ls.Tors[r], p, ls.UnnumberedNodeLinkLocals(r))
		cancel()
		if err != nil {
			t.Fatalf("ToR %d: the resumed agent's path is not back: %v\n%s", r, err, unnumberedTorState(ls, r))
		}
		t.Logf("rack %d: the resumed agent's path back at the ToR by %.1fs after it resumed", r, time.Since(resumed[r]).Seconds())
	}
	// No other session failed meanwhile.
	for i, a := range agents {
		if !frozen[i] && a.LogContains("BFD session failed") {
			t.Errorf("agent %d: a BFD session failed though it ran on:\n%s", i, a.LogTail(30))
		}
	}
}

// unnumberedTorState is what ToR r's daemon says of its sessions and
// routes, for a failure message.
func unnumberedTorState(ls *netlab.LeafSpine, r int) string {
	if ls.Opts.TorRouter[r] == netlab.RouterFRR {
		out, _ := ls.Vtysh(ls.Tors[r], "show bgp neighbors", "show bgp ipv4 unicast", "show bgp ipv6 unicast")
		return out
	}
	out, _ := ls.Birdc(ls.Tors[r], "show", "protocols", "all")
	routes, _ := ls.Birdc(ls.Tors[r], "show", "route", "all")
	return out + "\n" + routes
}
