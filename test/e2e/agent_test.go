package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/routerid"
	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// agentHoldTime is the agents' hold time in the tests, and so (at most) the
// graceful-restart time their routers keep a stopped agent's paths.
const agentHoldTime = 9 * time.Second

// agentConfig is the cloud-config of announceFrom Nodes: every node's
// agent peers with the router from its own address (no localAddress: the
// kernel's choice), graceful restart on (the default) and a short hold
// time, so that a dead agent's paths go within seconds. The nodes run no
// kube-proxy here: no health checks.
func agentConfig(pool4, pool6 string) string {
	return netlab.CloudConfigHead(pool4, pool6, netlab.DefaultSpeakerASN) + fmt.Sprintf(`
  announceFrom: Nodes
  peers:
  - {address: %s, asn: %d, holdTime: %s}
  - {address: %q, asn: %d, holdTime: %s}
healthChecks:
  enabled: false
`, netlab.RouterAddr(netlab.IPv4), netlab.DefaultRouterASN, agentHoldTime,
		netlab.RouterAddr(netlab.IPv6), netlab.DefaultRouterASN, agentHoldTime)
}

// agentKubeconfig applies the node agent's least-privilege identity as the
// chart renders it (deploy/node-agent/agent-l2.yaml: read Services, Nodes and
// EndpointSlices, the L2 witness; its DaemonSet stays unscheduled here, with
// no kubelet and no DaemonSet controller) and returns a function that writes
// a kubeconfig with its token for clients behind a relay.
func agentKubeconfig(t *testing.T) (write func(relay *framework.Relay, path string) error) {
	t.Helper()
	token := cp.NodeAgentToken(t)
	return func(relay *framework.Relay, path string) error {
		return relay.WriteKubeconfig(path, framework.NodeAgentName, token)
	}
}

// agentDaemonSet is the DaemonSet of deploy/node-agent/agent.yaml, which
// the agents are told is theirs: its nodeSelector and the nodes decide how
// a stopping agent ends its sessions.
const agentDaemonSet = "kube-system/" + framework.NodeAgentName

// agent is a node agent running in a lab node's namespace.
type agent struct {
	*framework.Process
	start func() (*framework.Process, error)
}

// agentPlace is where an agent runs: its node's name and network
// namespace.
type agentPlace struct{ node, netns string }

// startAgents starts the real metal-node-agent binary in every node
// namespace of the lab, as node lab.NodeName(i), with the agent's
// ServiceAccount; they are stopped by PID when the test ends.
func startAgents(t *testing.T, lab *netlab.Lab, cfg string) []*agent {
	t.Helper()
	var where []agentPlace
	for i, ns := range lab.Nodes {
		where = append(where, agentPlace{node: lab.NodeName(i), netns: ns})
	}
	return startAgentsIn(t, where, cfg)
}

// startAgentsIn starts an agent per place.
func startAgentsIn(t *testing.T, where []agentPlace, cfg string) []*agent {
	t.Helper()
	write := agentKubeconfig(t)
	dir := t.TempDir()
	var agents []*agent
	for i, w := range where {
		relay, err := cp.RelayAPIServer(w.netns)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(relay.Close)
		kc := filepath.Join(dir, fmt.Sprintf("kubeconfig-%d", i))
		if err := write(relay, kc); err != nil {
			t.Fatal(err)
		}
		a := &agent{start: func() (*framework.Process, error) {
			return framework.StartNodeAgent(framework.NodeAgentOptions{Name: "agent-" + w.node,
				LogPath: filepath.Join(cp.Dir, "logs", "agent-"+w.node+".log"), NetNS: w.netns, Node: w.node,
				Kubeconfig: kc, CloudConfig: cfg, Args: []string{"--daemonset", agentDaemonSet}})
		}}
		if a.Process, err = a.start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("%s log, last %d lines:\n%s", a.Name, framework.FailureLogLines, a.LogTail(framework.FailureLogLines))
			}
			if a.LogContains("forbidden") {
				t.Errorf("%s was refused something:\n%s", a.Name, a.LogTail(20))
			}
			a.Stop(5 * time.Second)
		})
		agents = append(agents, a)
	}
	return agents
}

// TestNodeAgents: with bgp.announceFrom Nodes the replicas only allocate,
// and the real agent binary on each node announces each address its node
// carries, itself as the next hop, on its own session (no ADD-PATH
// needed); a rolling update of an agent loses no request (graceful
// restart); a killed agent's path goes within its hold time and returns
// with it; the agents' least-privilege ServiceAccount is never refused.
func TestNodeAgents(t *testing.T) {
	lab := netlab.New(t, netlab.Options{Nodes: 3, Speakers: 1, NodePeers: []int{0, 1, 2}})
	registerLabNodes(t, lab)
	cfg := filepath.Join(t.TempDir(), "cloud-config.yaml")
	if err := os.WriteFile(cfg, []byte(agentConfig("198.18.170.0/24", "2001:db8:170::/120")), 0o600); err != nil {
		t.Fatal(err)
	}
	ccm := cp.StartCCMForTest(t, framework.CCMOptions{Name: "ccm-agents", CloudConfig: cfg, HealthChecks: true,
		Args: []string{"--leader-elect-resource-name", "e2e-agents"}})
	ns := framework.NewNamespace(t, client, framework.NamespaceName(t), framework.ReleaseServices(30*time.Second))
	agents := startAgents(t, lab, cfg)
	ctx := context.Background()

	hops := lab.NodeAddrs(netlab.IPv4)
	framework.CreateLoadBalancer(t, client, ns, "web")
	vip := waitVIPs(t, ns, "web", 1)[0]
	waitRoute(t, lab, vip, hops...)
	if err := lab.ServeVIP(vip); err != nil {
		t.Fatal(err)
	}
	if _, err := lab.ClientGet(ctx, netlab.VIPURL(vip)); err != nil {
		t.Errorf("%s does not answer: %v", vip, err)
	}
	// The replica announces nothing: each path is a node's own session,
	// one path per session.
	paths, err := lab.BGPPaths(netlab.HostPrefix(vip))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("router's BGP paths of %s: %v", vip, paths)
	if len(paths) != len(hops) {
		t.Errorf("router has %d paths for %s, want one per node (%d): %v", len(paths), vip, len(hops), paths)
	}
	for _, p := range paths {
		if p.Peer != p.NextHop {
			t.Errorf("path %v: the next hop is not the node that sent it", p)
		}
	}
	if ccm.LogContains("BGP session state changed") {
		t.Error("the replica runs BGP sessions with announceFrom Nodes")
	}

	t.Run("Local narrows to the node with an endpoint", func(t *testing.T) {
		framework.CreateLoadBalancer(t, client, ns, "local", framework.Local)
		local := waitVIPs(t, ns, "local", 1)[0]
		slice := framework.EndpointSlice(ns, "local", "e2e", framework.Endpoint{Address: "198.19.1.5", Node: lab.NodeName(1)})
		if _, err := client.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitRoute(t, lab, local, hops[1])
	})

	t.Run("a rolling update of an agent loses no request", func(t *testing.T) {
		// SIGTERM, then the new agent at once, as a DaemonSet's update does:
		// the router keeps the node's paths (graceful restart) until the
		// new session's End-of-RIB.
		loop := lab.StartRequests(vip)
		time.Sleep(time.Second)
		a := agents[1]
		a.Stop(5 * time.Second)
		if !a.LogContains("Stopping to be replaced") {
			t.Errorf("%s did not stop as replaced (graceful restart):\n%s", a.Name, a.LogTail(20))
		}
		p, err := a.start()
		if err != nil {
			t.Fatal(err)
		}
		a.Process = p
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := lab.WaitEstablished(wctx, hops[1]); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		sent, failed, errs := loop.Stop()
		if failed > 0 {
			t.Errorf("%d of %d requests failed across the agent's restart: %v", failed, sent, errs)
		}
		r, _, err := lab.Route(netlab.HostPrefix(vip))
		if err != nil || len(r.NextHops) != len(hops) {
			t.Errorf("route %s after the restart: %v (%v), want every node", vip, r.NextHops, err)
		}
		t.Logf("agent of %s restarted: %d requests, none lost", lab.NodeName(1), sent)
	})
	t.Run("a cordoned node's agent stops with a Cease", func(t *testing.T) {
		// Cordoned (drained), the node stops serving: its agent's path goes
		// as soon as it stops, not after the graceful-restart time.
		setUnschedulable(t, lab.NodeName(1), true)
		ceaseOnStop(t, lab, agents[1], vip, hops[1], hops)
		setUnschedulable(t, lab.NodeName(1), false)
		restartAgent(t, agents[1])
		waitRoute(t, lab, vip, hops...)
	})
	t.Run("an agent its DaemonSet no longer selects stops with a Cease", func(t *testing.T) {
		patchAgentDaemonSet(t, `{"spec":{"template":{"spec":{"nodeSelector":{"metal-ccm.io/e2e-selects":"none"}}}}}`)
		ceaseOnStop(t, lab, agents[0], vip, hops[0], hops)
		patchAgentDaemonSet(t, `{"spec":{"template":{"spec":{"nodeSelector":null}}}}`)
		restartAgent(t, agents[0])
		waitRoute(t, lab, vip, hops...)
	})
	t.Run("a killed agent's path goes within the hold time and returns", func(t *testing.T) {
		a := agents[2]
		if err := syscall.Kill(a.PID(), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-a.Done()
		start := time.Now()
		// Kept for the graceful-restart time (the hold time, for an agent),
		// then gone.
		wctx, cancel := context.WithTimeout(ctx, agentHoldTime+10*time.Second)
		defer cancel()
		if err := lab.WaitRoute(wctx, netlab.HostPrefix(vip), hops[:2]); err != nil {
			t.Fatalf("the killed agent's path stays past its hold time %s: %v", agentHoldTime, err)
		}
		t.Logf("agent of %s killed: its path gone after %.1fs (hold time %s)", lab.NodeName(2), time.Since(start).Seconds(), agentHoldTime)
		p, err := a.start()
		if err != nil {
			t.Fatal(err)
		}
		a.Process = p
		waitRoute(t, lab, vip, hops...)
	})
	t.Run("an IPv6-only node's agent announces its IPv6 paths", func(t *testing.T) {
		// Node 2 keeps only its IPv6 InternalIP: its agent, started again,
		// takes its router ID from that address, and announces the IPv6
		// addresses with it as next hop and no IPv4 one (it has no IPv4
		// next hop to give).
		framework.CreateLoadBalancer(t, client, ns, "v6", framework.IPv6Only)
		vip6 := waitVIPs(t, ns, "v6", 1)[0]
		hops6 := lab.NodeAddrs(netlab.IPv6)
		waitRoute(t, lab, vip6, hops6...)
		node := lab.NodeName(2)
		setInternalIPs(t, node, hops6[2])
		t.Cleanup(func() { setInternalIPs(t, node, hops[2], hops6[2]) })
		a := agents[2]
		a.Stop(5 * time.Second)
		restartAgent(t, a)
		waitRoute(t, lab, vip, hops[:2]...)
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := lab.WaitEstablished(wctx, hops6[2]); err != nil {
			t.Fatal(err)
		}
		waitRoute(t, lab, vip6, hops6...)
		id := routerid.FromIPv6(hops6[2])
		if !a.LogContains(fmt.Sprintf(`routerID="%s"`, id)) {
			t.Errorf("%s does not say router ID %s:\n%s", a.Name, id, a.LogTail(20))
		}
		t.Logf("IPv6-only %s: router ID %s, paths of %s from every node, of %s from the others", node, id, vip6, vip)
		setInternalIPs(t, node, hops[2], hops6[2])
		a.Stop(5 * time.Second)
		restartAgent(t, a)
		waitRoute(t, lab, vip, hops...)
	})
	t.Run("an address written into the status outside the pools is not announced", func(t *testing.T) {
		// The leader refuses a Service that names a pool it lacks and
		// leaves its status alone, so the status keeps what is written:
		// one address of the pool, which the agents announce (they
		// followed the write), and one in no pool, which they must not.
		svc := framework.CreateLoadBalancer(t, client, ns, "outside", framework.WithAnnotation("metal-ccm.io/pool", "none"))
		inPool := netip.MustParseAddr("198.18.170.250")
		setIngress(t, svc, []netip.Addr{inPool, writtenAddr})
		waitRoute(t, lab, inPool, hops...)
		stayWithout(t, lab, writtenAddr)
	})
	t.Run("a BGP pool added applies without a restart", func(t *testing.T) {
		// The ConfigMap's update, as helm upgrade makes it: the replicas
		// allocate from the new pool and the agents announce it, each
		// process the same as before.
		var pids []int
		for _, a := range agents {
			pids = append(pids, a.PID())
		}
		body := agentConfig("198.18.170.0/24", "2001:db8:170::/120")
		body = strings.Replace(body, "  pools:\n", "  pools:\n  - {name: added, addresses: [198.18.171.0/24]}\n", 1)
		framework.ReplaceFile(t, cfg, body)
		framework.CreateLoadBalancer(t, client, ns, "added", framework.WithAnnotation("metal-ccm.io/pool", "added"))
		added := waitVIPs(t, ns, "added", 1)[0]
		if !netip.MustParsePrefix("198.18.171.0/24").Contains(added) {
			t.Fatalf("address %s is not of the added pool", added)
		}
		waitRoute(t, lab, added, hops...)
		for i, a := range agents {
			if a.PID() != pids[i] {
				t.Errorf("%s restarted (PID %d, was %d)", a.Name, a.PID(), pids[i])
			}
			if !a.LogContains("Applied the changed pools without a restart") {
				t.Errorf("%s does not say it applied the pools", a.Name)
			}
		}
	})
}

// ceaseOnStop stops agent a (SIGTERM) and waits for its node's path (hop)
// to leave the router's kernel route of vip: well within the hold time,
// which graceful restart would keep it for.
func ceaseOnStop(t *testing.T, lab *netlab.Lab, a *agent, vip netip.Addr, hop netip.Addr, hops []netip.Addr) {
	t.Helper()
	var rest []netip.Addr
	for _, h := range hops {
		if h != hop {
			rest = append(rest, h)
		}
	}
	start := time.Now()
	a.Stop(5 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), agentHoldTime+10*time.Second)
	defer cancel()
	if err := lab.WaitRoute(ctx, netlab.HostPrefix(vip), rest); err != nil {
		t.Fatalf("%s's path stays after its agent stopped: %v", hop, err)
	}
	took := time.Since(start)
	t.Logf("%s: its node's path gone from the router's kernel %.2fs after SIGTERM (hold time %s)", a.Name, took.Seconds(), agentHoldTime)
	if !a.LogContains("Stopping for good") {
		t.Errorf("%s did not stop for good:\n%s", a.Name, a.LogTail(20))
	}
	// Graceful restart would keep the path for the hold time.
	if took > agentHoldTime/2 {
		t.Errorf("%s's path went %.1fs after SIGTERM: not at once (hold time %s)", hop, took.Seconds(), agentHoldTime)
	}
}

// restartAgent starts a stopped agent again.
func restartAgent(t *testing.T, a *agent) {
	t.Helper()
	p, err := a.start()
	if err != nil {
		t.Fatal(err)
	}
	a.Process = p
}

// setUnschedulable cordons or uncordons a node.
func setUnschedulable(t *testing.T, node string, on bool) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, on)
	if _, err := client.CoreV1().Nodes().Patch(context.Background(), node, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// patchAgentDaemonSet merge-patches the agents' DaemonSet.
func patchAgentDaemonSet(t *testing.T, patch string) {
	t.Helper()
	ns, name, _ := strings.Cut(agentDaemonSet, "/")
	if _, err := client.AppsV1().DaemonSets(ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// setInternalIPs makes ips the node's InternalIPs, its only addresses.
func setInternalIPs(t *testing.T, name string, ips ...netip.Addr) {
	t.Helper()
	ctx := context.Background()
	n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.Addresses = nil
	for _, ip := range ips {
		n.Status.Addresses = append(n.Status.Addresses, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip.String()})
	}
	if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
