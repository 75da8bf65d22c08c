package realnodes

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/routerid"
	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// The IPv6-only cluster's pool, apart from the other tests' pools.
var v6OnlyPool = netip.MustParsePrefix("2001:db8:146::/120")

// v6OnlyCloudConfig has the agents announce (announceFrom Nodes) from an
// IPv6 pool to the router's IPv6 address alone: nothing in it is IPv4.
func v6OnlyCloudConfig() string {
	return fmt.Sprintf(`apiVersion: metal-ccm.io/v1alpha1
kind: CloudConfig
loadBalancer:
  pools:
  - name: default
    addresses: [%q]
bgp:
  asn: %d
  announceFrom: Nodes
  peers:
  - {address: %q, asn: %d, holdTime: 9s}
`, v6OnlyPool, netlab.DefaultSpeakerASN, netlab.RouterAddr(netlab.IPv6), netlab.DefaultRouterASN)
}

// TestIPv6OnlyRealNodes runs two IPv6-only real nodes (containerd, a
// kubelet whose only --node-ip is IPv6, kube-proxy) whose links to the
// router have no IPv4 address, the CCM, and the real node agent on each
// node with its least-privilege identity (announceFrom Nodes), peering with
// the router's IPv6 address alone: once with each router (BIRD 2, FRR),
// each running the config docs/routes.md shows for it. The nodes get
// only an IPv6 InternalIP; each agent's router ID is its address folded
// into 32 bits (the rule of docs/node-agent.md, "IPv6-only nodes"), as the
// router sees it; an IPv6 SingleStack LoadBalancer Service with
// externalTrafficPolicy Local and a pod on each node gets an address of the
// IPv6 pool, which the router learns from each node's IPv6 session, and the
// client reaches it through the router and a node's kube-proxy, its own
// address kept. The control plane is the suite's (dual-stack); the pods get
// both families from the cluster's pod CIDRs.
func TestIPv6OnlyRealNodes(t *testing.T) {
	archives, pauseRef := testImages(t)
	for _, router := range netlab.RouterKinds {
		t.Run(string(router), func(t *testing.T) { testIPv6OnlyRealNodes(t, router, archives, pauseRef) })
	}
}

// testIPv6OnlyRealNodes is TestIPv6OnlyRealNodes with one router, in a lab
// of its own.
func testIPv6OnlyRealNodes(t *testing.T, router netlab.RouterKind, archives []string, pauseRef string) {
	lab := netlab.New(t, netlab.Options{Nodes: 2, NodePeers: []int{0, 1}, IPv6Only: true, Router: router})
	ctx := context.Background()
	addrs := lab.NodeAddrs(netlab.IPv6)
	conf, err := lab.RouterConfig()
	if err != nil {
		t.Fatal(err)
	}
	marker := "<!-- ipv6only:" + string(router) + " -->"
	block, err := netlab.DocBlock("routes.md", marker)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimRight(conf, "\n"); block != want {
		t.Errorf("docs/routes.md: the block after %s is not the config the router runs; put this in it:\n%s", marker, want)
	}
	// No IPv4 address on the nodes' links (and so no IPv4 route off the
	// node): only the loopback keeps 127.0.0.1, which the node's daemons
	// reach the API server's relay on.
	for i, ns := range lab.Nodes {
		out, err := lab.Exec(ns, "ip", "-4", "-o", "addr", "show")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out, "198.18.") || strings.Count(out, " inet ") != 1 {
			t.Fatalf("node %d: IPv4 addresses left: %s", i, out)
		}
	}
	cfg := writeConfig(t, v6OnlyCloudConfig())
	cp.StartCCMForTest(t, framework.CCMOptions{Name: "ccm-v6only-" + string(router), CloudConfig: cfg, HealthChecks: true, Args: []string{
		"--leader-elect-resource-name", "v6only-" + string(router), "--allocate-node-cidrs=false", "--configure-cloud-routes=false",
		"--node-monitor-period", "1s",
	}})
	ns := framework.NewNamespace(t, client, framework.NamespaceName(t), framework.ReleaseServices(30*time.Second))
	defaultServiceAccount(t, ns)

	nodes := make([]*framework.RealNode, len(lab.Nodes))
	names := make([]string, len(lab.Nodes))
	for i := range lab.Nodes {
		names[i] = fmt.Sprintf("v6%s%d", router, i)
		name := names[i]
		t.Cleanup(func() { _ = client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		nodes[i] = cp.StartRealNode(ctx, t, framework.RealNodeOptions{
			Name: name, NetNS: lab.Nodes[i], NodeIPs: []string{addrs[i].String()},
			Images: archives, SandboxImage: pauseRef,
		})
	}
	t.Cleanup(func() { deletePods(ns) })

	for i, n := range nodes {
		node := waitNode(t, n.Name, time.Minute, func(node *v1.Node) bool {
			return !framework.Uninitialized(node) && nodeReady(node) && !hasTaint(node, v1.TaintNodeNotReady)
		})
		var internal []string
		for _, a := range node.Status.Addresses {
			if a.Type == v1.NodeInternalIP {
				internal = append(internal, a.Address)
			}
		}
		t.Logf("node %s: Ready and initialized %.1fs after its start, addresses %v", n.Name, time.Since(n.Started).Seconds(), node.Status.Addresses)
		if !slices.Equal(internal, []string{addrs[i].String()}) {
			t.Errorf("node %s: InternalIPs %v, want %s alone", n.Name, internal, addrs[i])
		}
	}
	if t.Failed() {
		return
	}

	// The agents, with the chart's least-privilege identity, each at its
	// node's API relay.
	token := cp.NodeAgentToken(t)
	dir := t.TempDir()
	agents := make([]*framework.NodeAgent, len(nodes))
	for i, n := range nodes {
		kc := filepath.Join(dir, fmt.Sprintf("agent-kubeconfig-%d", i))
		if err := n.WriteKubeconfig(kc, framework.NodeAgentName, token); err != nil {
			t.Fatal(err)
		}
		agents[i] = framework.StartNodeAgentForTest(t, framework.NodeAgentOptions{
			Name: "agent-" + n.Name, LogPath: filepath.Join(cp.Dir, "logs", "agent-"+n.Name+".log"),
			NetNS: lab.Nodes[i], Node: n.Name, Kubeconfig: kc, CloudConfig: cfg,
		})
	}

	t.Run("each agent peers over IPv6 with a router ID folded from its address", func(t *testing.T) {
		waitSessions(t, lab, addrs, true)
		for i, a := range agents {
			want := routerid.FromIPv6(addrs[i])
			if !a.LogContains(fmt.Sprintf(`routerID="%s"`, want)) {
				t.Errorf("%s does not say router ID %s:\n%s", a.Name, want, a.LogTail(20))
			}
			// The router's side: the session's neighbor ID.
			ids, err := lab.NeighborIDs()
			if err != nil {
				t.Fatal(err)
			}
			if got := ids[addrs[i]]; got != want {
				t.Errorf("%s: neighbor ID of %s is %s, want %s", router, addrs[i], got, want)
			}
			t.Logf("agent of %s: session from %s, router ID %s", nodes[i].Name, addrs[i], want)
		}
	})
	if t.Failed() {
		return
	}

	t.Run("an IPv6 Local Service is reached through the router and kube-proxy", func(t *testing.T) {
		createDeployment(t, ns, echoDeployment("echo", int32(len(nodes)), names)) //nolint:gosec // two nodes
		pods := waitPods(t, ns, "echo", len(nodes))
		var on []string
		for _, p := range pods {
			on = append(on, p.Spec.NodeName)
		}
		slices.Sort(on)
		if !slices.Equal(on, names) {
			t.Fatalf("pods on nodes %v, want one on each of %v", on, names)
		}
		framework.CreateLoadBalancer(t, client, ns, "echo", withTargetPort(8080), framework.IPv6Only, framework.Local)
		vip := waitVIPs(t, ns, "echo", 1)[0]
		if !v6OnlyPool.Contains(vip) {
			t.Fatalf("address %s is not in the pool %s", vip, v6OnlyPool)
		}
		lab.RequireRoute(t, netlab.HostPrefix(vip), addrs...)
		paths, err := lab.BGPPaths(netlab.HostPrefix(vip))
		if err != nil {
			t.Fatal(err)
		}
		var peers []netip.Addr
		for _, p := range paths {
			peers = append(peers, p.Peer)
		}
		slices.SortFunc(peers, netip.Addr.Compare)
		if !slices.Equal(peers, addrs) {
			t.Errorf("router's paths for %s: %v, want one from each node's IPv6 session %v", vip, paths, addrs)
		}
		waitAnswers(t, lab, vip)
		client6 := netlab.ClientAddr(netlab.IPv6).String()
		seen := map[string]int{}
		for range 10 {
			got, err := clientEcho(ctx, lab, vip)
			if err != nil {
				t.Fatalf("request to %s: %v", vip, err)
			}
			host, _, _ := net.SplitHostPort(got.Client)
			if !slices.Contains(names, got.Node) || host != client6 {
				t.Errorf("answered by %s on %s seeing client %s, want a pod on %v seeing %s", got.Pod, got.Node, got.Client, names, client6)
			}
			seen[got.Node]++
		}
		t.Logf("http://[%s]:80/ answers from %v", vip, seen)
		// Each agent checks its own kube-proxy at the node's IPv6 address
		// and fails closed: its path above says the check passes.
		for i, a := range agents {
			want := fmt.Sprintf(`target="%s" state="healthy"`, netip.AddrPortFrom(addrs[i], config.DefaultHealthCheckPort))
			if !a.LogContains(want) {
				t.Errorf("%s never logged %s:\n%s", a.Name, want, a.LogTail(20))
			}
		}
	})
}
