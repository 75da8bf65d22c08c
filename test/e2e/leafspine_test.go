package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// leafSpineHoldTime is the agents' sessions' hold time, and so the most a
// killed agent's paths stay at its ToR without BFD; with BFD (300 ms × 3)
// they leave in about a second, well within it, which tells BFD's work from
// the hold timer's.
const leafSpineHoldTime = 9 * time.Second

// bfdWithdrawBound is the most a powered-off node's paths may stay at its
// ToR with BFD 300 ms × 3 (goal: about 1 s; a shared test machine is slow
// at times): well below leafSpineHoldTime.
const bfdWithdrawBound = 4 * time.Second

// TestLeafSpineNodeAgents: two racks behind their own ToR (ToR 1 without
// ADD-PATH), a spine with ECMP, the client behind it. The real agent on
// each node peers only with its rack's ToR (nodeSelector on the zone
// label); the spine has one ECMP route per address across both racks, the
// client reaches nodes in both, each ToR has one path per node of its rack
// (its own session: no ADD-PATH needed), and externalTrafficPolicy Local
// narrows to the node with an endpoint.
func TestLeafSpineNodeAgents(t *testing.T) {
	for _, tc := range []struct {
		name string
		tors [2]netlab.RouterKind
		bfd  bool
	}{
		// BFD on every node session: BIRD's bfd protocol, and FRR's bfdd
		// on ToR 1's listen-range peer groups.
		{"BIRD ToRs", [2]netlab.RouterKind{netlab.RouterBIRD, netlab.RouterBIRD}, true},
		{"ToR 1 FRR", [2]netlab.RouterKind{netlab.RouterBIRD, netlab.RouterFRR}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testLeafSpineNodeAgents(t, netlab.LeafSpineOptions{TorRouter: tc.tors, BFD: tc.bfd})
		})
	}
}

func testLeafSpineNodeAgents(t *testing.T, opts netlab.LeafSpineOptions) {
	ls := netlab.NewLeafSpine(t, opts)
	ctx := context.Background()
	type rackNode struct {
		name string
		r, i int
	}
	var nodes []rackNode
	for r := range 2 {
		for i := range ls.Racks[r] {
			n := rackNode{name: fmt.Sprintf("rack%d-node%d", r, i), r: r, i: i}
			if _, err := framework.CreateReadyNode(ctx, client, n.name,
				netlab.LeafSpineNodeAddr(netlab.IPv4, r, i).String(), netlab.LeafSpineNodeAddr(netlab.IPv6, r, i).String()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = client.CoreV1().Nodes().Delete(context.Background(), n.name, metav1.DeleteOptions{}) })
			// The rack's zone label, and pod CIDRs as an installer sets them.
			k := 60 + 2*r + i
			patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}},`+
				`"spec":{"podCIDR":"198.19.%d.0/24","podCIDRs":["198.19.%d.0/24","2001:db8:19:%d::/64"]}}`,
				netlab.LeafSpineZoneLabel, netlab.LeafSpineZone(r), k, k, k)
			if _, err := client.CoreV1().Nodes().Patch(ctx, n.name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			nodes = append(nodes, n)
		}
	}
	cfg := filepath.Join(t.TempDir(), "cloud-config.yaml")
	// Pod routes too: the agents announce their nodes' pod CIDRs.
	// Weighted ECMP for the Local Services (the last subtest).
	body := netlab.WithPoolFields(ls.AgentCloudConfig(leafSpineHoldTime, "198.18.171.0/24", "2001:db8:171::/120"), "weightedECMP: true") +
		"routes:\n  enabled: true\n"
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cp.StartCCMForTest(t, framework.CCMOptions{Name: "ccm-leafspine", CloudConfig: cfg, HealthChecks: true,
		// The agents announce the pod routes by themselves; the route
		// controller, which learns of them from the agents' pods, is
		// TestChartNodeAgentsOnRealNodes' (no pods here).
		Args: []string{"--leader-elect-resource-name", "e2e-leafspine", "--configure-cloud-routes=false"}})
	ns := framework.NewNamespace(t, client, framework.NamespaceName(t), framework.ReleaseServices(30*time.Second))
	var where []agentPlace
	for _, n := range nodes {
		where = append(where, agentPlace{node: n.name, netns: ls.NodeNamespace(n.r, n.i)})
	}
	agents := startAgentsIn(t, where, cfg)

	framework.CreateLoadBalancer(t, client, ns, "web", framework.DualStack)
	vips := waitVIPs(t, ns, "web", 2)
	for _, n := range nodes {
		if err := ls.ServeVIP(n.r, n.i, vips...); err != nil {
			t.Fatal(err)
		}
	}
	wait := func(router string, p netip.Prefix, hops ...netip.Addr) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := ls.WaitRoute(wctx, router, p, hops); err != nil {
			r, _, _ := ls.Route(router, p)
			bfd, _ := ls.BFDStates(router)
			t.Fatalf("%s: route %s: want next hops %v, has %v: %v; BFD %v\n%s", router, p, hops, r.NextHops, err, bfd, ls.RouterLogs())
		}
	}
	for _, vip := range vips {
		f := netlab.IPv4
		if vip.Is6() {
			f = netlab.IPv6
		}
		p := netlab.HostPrefix(vip)
		// The spine: one ECMP route across both racks' ToRs.
		wait(ls.Spine, p, netlab.LeafSpineTorUplinkAddr(f, 0), netlab.LeafSpineTorUplinkAddr(f, 1))
		// Each ToR: its own rack's nodes, one path per node's session, with
		// and without ADD-PATH.
		for r := range 2 {
			wait(ls.Tors[r], p, ls.NodeAddrs(f, r)...)
			paths, err := ls.BGPPaths(ls.Tors[r], p)
			if err != nil {
				t.Fatal(err)
			}
			// The ToR also learns the other rack's path from the spine.
			var fromNodes []netlab.Path
			for _, path := range paths {
				if path.Peer != netlab.LeafSpineSpineAddr(f, r) {
					fromNodes = append(fromNodes, path)
				}
			}
			if len(fromNodes) != len(ls.NodeAddrs(f, r)) {
				t.Errorf("ToR %d (ADD-PATH %v): %d paths for %s from its nodes, want one per node of its rack: %v",
					r, r != ls.NoAddPathTor(), len(fromNodes), vip, paths)
			}
			for _, path := range fromNodes {
				if path.Peer != path.NextHop || !slices.Contains(ls.NodeAddrs(f, r), path.NextHop) {
					t.Errorf("ToR %d: path %v is not a node of its rack announcing itself", r, path)
				}
			}
		}
		// The client reaches nodes in both racks.
		seen := map[string]bool{}
		for range 40 {
			body, err := ls.ClientGet(ctx, netlab.VIPURL(vip))
			if err != nil {
				t.Fatalf("request to %s: %v", vip, err)
			}
			seen[body[:2]] = true
		}
		if !seen["r0"] || !seen["r1"] {
			t.Errorf("40 requests to %s reached racks %v, want both", vip, seen)
		}
	}

	t.Run("pod routes across racks, dual-stack", func(t *testing.T) {
		// Each node serves HTTP on the first address of each of its pod
		// CIDRs (a pod of its own, as far as routing goes).
		pods := map[string]map[netlab.Family]netip.Addr{}
		for _, n := range nodes {
			node := framework.WaitNode(t, client, n.name, 30*time.Second, func(n *v1.Node) bool { return len(n.Spec.PodCIDRs) == 2 })
			addrs := map[netlab.Family]netip.Addr{}
			for _, c := range node.Spec.PodCIDRs {
				p := netip.MustParsePrefix(c)
				f := netlab.IPv4
				if p.Addr().Is6() {
					f = netlab.IPv6
				}
				addrs[f] = p.Addr().Next()
				// The node's ToR routes it to the node; the spine to that ToR.
				wait(ls.Tors[n.r], p, netlab.LeafSpineNodeAddr(f, n.r, n.i))
				wait(ls.Spine, p, netlab.LeafSpineTorUplinkAddr(f, n.r))
			}
			pods[n.name] = addrs
			if err := ls.ServeVIP(n.r, n.i, addrs[netlab.IPv4], addrs[netlab.IPv6]); err != nil {
				t.Fatal(err)
			}
			// The agent says it is ready once its pod CIDRs are announced:
			// the CCM's route controller reads that from its pod.
			out, err := ls.Exec(ls.NodeNamespace(n.r, n.i), "curl", "-sS", "--max-time", "5", "http://127.0.0.1:10263/readyz")
			if err != nil || out != "ok" {
				t.Errorf("agent of %s: /readyz %q, %v", n.name, out, err)
			}
		}
		// From a pod address of a rack-0 node to one of a rack-1 node and
		// back: the way there and the reply both cross the spine.
		for _, pair := range [][2]rackNode{{nodes[0], nodes[3]}, {nodes[2], nodes[1]}} {
			from, to := pair[0], pair[1]
			for _, f := range []netlab.Family{netlab.IPv4, netlab.IPv6} {
				src, dst := pods[from.name][f], pods[to.name][f]
				out, err := ls.Exec(ls.NodeNamespace(from.r, from.i), "curl", "-sS", "--max-time", "5",
					"--interface", src.String(), netlab.VIPURL(dst))
				if want := fmt.Sprintf("r%dn%d", to.r, to.i); err != nil || out != want {
					t.Errorf("%s (%s) -> %s (%s): %q, %v; want %q", src, from.name, dst, to.name, out, err, want)
				}
			}
		}
	})

	t.Run("a killed agent's path leaves its ToR within the hold time and returns", func(t *testing.T) {
		// Rack 1's ToR: without ADD-PATH (BIRD), or FRR.
		k := slices.IndexFunc(nodes, func(n rackNode) bool { return n.r == 1 && n.i == 0 })
		a, n := agents[k], nodes[k]
		p := netlab.HostPrefix(vips[slices.IndexFunc(vips, netip.Addr.Is4)])
		if err := syscall.Kill(a.PID(), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-a.Done()
		start := time.Now()
		wctx, cancel := context.WithTimeout(ctx, leafSpineHoldTime+10*time.Second)
		defer cancel()
		if err := ls.WaitRoute(wctx, ls.Tors[1], p, []netip.Addr{netlab.LeafSpineNodeAddr(netlab.IPv4, 1, 1)}); err != nil {
			t.Fatalf("the killed agent's path stays at ToR 1 past its hold time %s: %v", leafSpineHoldTime, err)
		}
		t.Logf("agent of %s killed: its path gone from ToR 1 after %.1fs (hold time %s)", n.name, time.Since(start).Seconds(), leafSpineHoldTime)
		proc, err := a.start()
		if err != nil {
			t.Fatal(err)
		}
		a.Process = proc
		wait(ls.Tors[1], p, ls.NodeAddrs(netlab.IPv4, 1)...)
		wait(ls.Spine, p, netlab.LeafSpineTorUplinkAddr(netlab.IPv4, 0), netlab.LeafSpineTorUplinkAddr(netlab.IPv4, 1))
		if opts.BFD {
			// The restarted agent's BFD sessions (new discriminators) come
			// up at the ToR again; the next subtest checks they stay up.
			bctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			if err := ls.WaitBFDUp(bctx, ls.Tors[1], netlab.LeafSpineNodeAddr(netlab.IPv4, 1, 0), netlab.LeafSpineNodeAddr(netlab.IPv6, 1, 0)); err != nil {
				t.Fatalf("ToR 1: BFD sessions with the restarted agent's node not up: %v\n%s", err, ls.RouterLogs())
			}
		}
	})

	t.Run("BFD: sessions up, a powered-off node's paths leave its ToR in about a second", func(t *testing.T) {
		if !opts.BFD {
			t.Skip("no BFD at the ToRs in this setup")
		}
		// Every node's BFD session is up at its ToR, and the agent says so.
		for _, n := range nodes {
			bctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			err := ls.WaitBFDUp(bctx, ls.Tors[n.r], netlab.LeafSpineNodeAddr(netlab.IPv4, n.r, n.i), netlab.LeafSpineNodeAddr(netlab.IPv6, n.r, n.i))
			cancel()
			if err != nil {
				t.Fatalf("ToR %d: BFD sessions with %s not up: %v\n%s", n.r, n.name, err, ls.RouterLogs())
			}
			checkAgentBFDUp(t, ls, ls.NodeNamespace(n.r, n.i), n.name, netlab.LeafSpineTorAddr(netlab.IPv4, n.r).String())
		}
		// Power rack 1's node 1 off: its link down, its agent frozen.
		k := slices.IndexFunc(nodes, func(n rackNode) bool { return n.r == 1 && n.i == 1 })
		p := netlab.HostPrefix(vips[slices.IndexFunc(vips, netip.Addr.Is4)])
		wait(ls.Tors[1], p, ls.NodeAddrs(netlab.IPv4, 1)...)
		took, powerOn := bfdFailNode(t, ls, agents[k], 1, 1, p, []netip.Addr{netlab.LeafSpineNodeAddr(netlab.IPv4, 1, 0)}, true)
		t.Logf("node %s powered off: its path gone from ToR 1's kernel after %.2fs (BFD 300ms × 3, hold time %s)", nodes[k].name, took.Seconds(), leafSpineHoldTime)
		// Power on: the node's path is back.
		powerOn()
		wait(ls.Tors[1], p, ls.NodeAddrs(netlab.IPv4, 1)...)
		// No other session failed meanwhile: a session that comes up and
		// fails again (the router counting its detection time on an
		// interval the agent does not send at) resets the BGP session,
		// and the agent logs it.
		for i, other := range agents {
			if i != k && other.LogContains("BFD session failed") {
				t.Errorf("agent of %s: a BFD session failed though its node stayed up:\n%s", nodes[i].name, other.LogTail(30))
			}
		}
	})

	t.Run("Local narrows to the node with an endpoint", func(t *testing.T) {
		framework.CreateLoadBalancer(t, client, ns, "local", framework.Local)
		local := waitVIPs(t, ns, "local", 1)[0]
		slice := framework.EndpointSlice(ns, "local", "e2e", framework.Endpoint{Address: "198.19.1.5", Node: nodes[3].name})
		if _, err := client.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p := netlab.HostPrefix(local)
		wait(ls.Spine, p, netlab.LeafSpineTorUplinkAddr(netlab.IPv4, 1))
		wait(ls.Tors[1], p, netlab.LeafSpineNodeAddr(netlab.IPv4, 1, 1))
		// Rack 0 reaches it through the spine: none of its nodes announces it.
		wait(ls.Tors[0], p, netlab.LeafSpineSpineAddr(netlab.IPv4, 0))
	})
	t.Run("weighted ECMP by endpoints", func(t *testing.T) {
		testLeafSpineWeights(t, ls, ns, opts.TorRouter[1], nodes[2].name, nodes[3].name)
	})
}

// testLeafSpineWeights: a Local Service with 3 endpoints on rack 1's node 0
// and 1 on its node 1, in a pool with weightedECMP. Each node's agent sends
// its path with its endpoints as link bandwidth: an FRR ToR installs the
// route with next-hop weights 3:1 and the client's requests land on the
// nodes within 10 points of 75/25; a BIRD ToR ignores the community and
// keeps equal weights, and the requests still reach both nodes. The
// endpoints then move (1 and 3): the FRR ToR's weights follow.
func testLeafSpineWeights(t *testing.T, ls *netlab.LeafSpine, ns string, tor netlab.RouterKind, node0, node1 string) {
	ctx := context.Background()
	framework.CreateLoadBalancer(t, client, ns, "weighted", framework.Local)
	vip := waitVIPs(t, ns, "weighted", 1)[0]
	slice := framework.EndpointSlice(ns, "weighted", "e2e",
		framework.Endpoint{Address: "198.19.2.1", Node: node0}, framework.Endpoint{Address: "198.19.2.2", Node: node0},
		framework.Endpoint{Address: "198.19.2.3", Node: node0}, framework.Endpoint{Address: "198.19.2.4", Node: node1})
	if _, err := client.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := ls.ServeVIP(1, i, vip); err != nil {
			t.Fatal(err)
		}
	}
	p := netlab.HostPrefix(vip)
	hops := []netip.Addr{netlab.LeafSpineNodeAddr(netlab.IPv4, 1, 0), netlab.LeafSpineNodeAddr(netlab.IPv4, 1, 1)}
	want, share := [2]int{3, 1}, 0.75
	if tor != netlab.RouterFRR {
		want, share = [2]int{1, 1}, 0.5
	}
	waitWeights := func(want [2]int) netlab.Route {
		t.Helper()
		var r netlab.Route
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			var err error
			if r, _, err = ls.Route(ls.Tors[1], p); err != nil {
				t.Fatal(err)
			}
			if slices.Equal(r.NextHops, hops) && len(r.Weights) == 2 && r.Weights[0]*want[1] == r.Weights[1]*want[0] {
				return r
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s ToR: route %s via %v weights %v, want via %v in the ratio %v", tor, p, r.NextHops, r.Weights, hops, want)
			}
		}
	}
	r := waitWeights(want)
	start := time.Now()
	const requests = 1000
	answers, err := netlab.Answers(ctx, ls.ClientGet, netlab.VIPURL(vip), requests)
	if err != nil {
		t.Fatalf("requests to %s: %v (answered so far: %v)", vip, err, answers)
	}
	got := float64(answers["r1n0"]) / requests
	t.Logf("%s ToR: weights %v; %d requests in %.1fs: %v, %.0f%% on rack 1's node 0", tor, r.Weights, requests, time.Since(start).Seconds(), answers, 100*got)
	if answers["r1n0"]+answers["r1n1"] != requests || got < share-0.1 || got > share+0.1 {
		t.Errorf("%s ToR: %v of %d requests, want %.0f%% ± 10 on rack 1's node 0 and the rest on its node 1", tor, answers, requests, 100*share)
	}

	// The endpoints move: 1 on node 0, 3 on node 1. Each agent sends its
	// path again with its new count.
	moved := framework.EndpointSlice(ns, "weighted", "e2e",
		framework.Endpoint{Address: "198.19.2.1", Node: node0}, framework.Endpoint{Address: "198.19.2.2", Node: node1},
		framework.Endpoint{Address: "198.19.2.3", Node: node1}, framework.Endpoint{Address: "198.19.2.4", Node: node1})
	if _, err := client.DiscoveryV1().EndpointSlices(ns).Update(ctx, moved, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if tor == netlab.RouterFRR {
		want = [2]int{1, 3}
	}
	r = waitWeights(want)
	t.Logf("%s ToR: weights %v after the endpoints moved to 1 and 3", tor, r.Weights)
}
