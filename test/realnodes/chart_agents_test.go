package realnodes

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/metal-ccm/metal-ccm/pkg/sessions"
	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/images"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// The agents' names in the chart (templates/agent.yaml).
const agentName = "metal-node-agent" // ServiceAccount, DaemonSet, container, app.kubernetes.io/name

// The pool of this test's release, apart from the other tests' pools.
var (
	agentsPool4 = netip.MustParsePrefix("198.18.113.0/24")
	agentsPool6 = netip.MustParsePrefix("2001:db8:113::/120")
)

// agentsCloudConfig has the agents announce (announceFrom Nodes) to the
// router, pod routes included: each agent dials from its own node.
func agentsCloudConfig() string { return agentsCloudConfigWith("", true) }

// agentsCloudConfigWith is agentsCloudConfig with more pools' lines, and
// without the IPv6 peer unless v6Peer.
func agentsCloudConfigWith(pools string, v6Peer bool) string {
	cfg := fmt.Sprintf(`apiVersion: metal-ccm.io/v1alpha1
kind: CloudConfig
loadBalancer:
  pools:
  - name: default
    addresses: [%s, %q]
%shealthChecks:
  enabled: false
routes:
  enabled: true
bgp:
  asn: %d
  announceFrom: Nodes
  peers:
  - {address: %s, asn: %d, holdTime: 9s}
`, agentsPool4, agentsPool6, pools, netlab.DefaultSpeakerASN, netlab.RouterAddr(netlab.IPv4), netlab.DefaultRouterASN)
	if v6Peer {
		cfg += fmt.Sprintf("  - {address: %q, asn: %d, holdTime: 9s}\n", netlab.RouterAddr(netlab.IPv6), netlab.DefaultRouterASN)
	}
	return cfg
}

// TestChartNodeAgentsOnRealNodes installs the chart with the node agents
// (agent.enabled, announceFrom Nodes, routes.enabled) on two real nodes: the
// kubelets run the agents' DaemonSet with their own ServiceAccount, each
// agent announces its own node's pod CIDRs from its own session, its pod
// turns Ready (its readiness probe: /readyz), and the CCM's route
// controller, which reads the agents' pods, sets each node's
// NetworkUnavailable to False; a pod on one node answers a request from
// the other node's pod network through the router. Each agent publishes
// its sessions in its own Lease, owned by its pod, through the chart's
// admission policy (its token is the kubelet's, bound to its pod), and
// kubectl metal-ccm status shows them established. No log has a refusal.
func TestChartNodeAgentsOnRealNodes(t *testing.T) {
	requireChartTools(t)
	// The router peers with both nodes' own addresses: each agent dials
	// from its node.
	lab := netlab.New(t, netlab.Options{Nodes: 2, Speakers: 1, NodePeers: []int{0, 1}})
	ctx := context.Background()

	ccmImage, err := images.BuildCCM(ctx, filepath.Join(t.TempDir(), "ccm.tar"))
	if err != nil {
		t.Fatalf("build the CCM's image: %v", err)
	}
	// Both nodes run an agent from the CCM's image; node 0 also the CCM.
	names := []string{"agents-cp", "agents-worker"}
	nodes := startChartNodes(ctx, t, lab, names, ccmImage.Path, true, nil)
	cpNode, worker := nodes[0], nodes[1]

	installChart(t, ccmImage.Ref, agentsCloudConfig(), map[string]any{"agent": map[string]any{"enabled": true}})
	ccmPod := waitCCMPod(t, cpNode.Name)
	agents := waitAgentPods(t, names)
	for _, p := range agents {
		checkAgentPodSpec(t, p)
	}

	// Each node's pod routes: from its own agent's session, to the node.
	for i, n := range nodes {
		node := waitNode(t, n.Name, time.Minute, func(node *v1.Node) bool { return len(node.Spec.PodCIDRs) == 2 })
		for _, c := range node.Spec.PodCIDRs {
			p := netip.MustParsePrefix(c)
			f := netlab.FamilyOf(p.Addr())
			lab.RequireRoute(t, p, netlab.NodeAddr(f, i))
			paths, err := lab.BGPPaths(p)
			if err != nil {
				t.Fatal(err)
			}
			if len(paths) != 1 || paths[0].Peer != netlab.NodeAddr(f, i) {
				t.Errorf("router's paths for %s (pod CIDR of %s): %v, want one, from the node's own session %s", p, n.Name, paths, netlab.NodeAddr(f, i))
			}
		}
	}
	// The route controller learns of them from the agents' pods.
	for _, n := range nodes {
		node := waitNode(t, n.Name, time.Minute, func(node *v1.Node) bool {
			c := networkUnavailable(node)
			return c != nil && c.Status == v1.ConditionFalse
		})
		c := networkUnavailable(node)
		t.Logf("node %s: NetworkUnavailable=%s (%s: %s)", n.Name, c.Status, c.Reason, c.Message)
		if c.Reason != "RouteCreated" {
			t.Errorf("node %s: NetworkUnavailable reason %q, want RouteCreated (the route controller's)", n.Name, c.Reason)
		}
	}

	t.Run("kubectl metal-ccm status shows the pods, the leader and every agent's sessions", func(t *testing.T) {
		// The leader's identity is its hostname: in this lab the host's,
		// which names no node (the kubelets' --hostname-override), so the
		// pod that leads may show as "?". Each agent publishes its
		// sessions in its own Lease, which the chart's admission policy
		// lets it write (its token bound to its pod).
		want := []string{
			`(?m)^Leader: +\S+_`,
			`(?m)^  ` + regexp.QuoteMeta(ccmPod.Name) + ` +` + regexp.QuoteMeta(cpNode.Name) + ` +yes +\d+ +(yes|\?)$`,
			`(?m)^Node agents: +2 pods, 2 Ready$`,
			`(?m)^  node agents: 2 of 2 with every session established$`,
		}
		for _, p := range agents {
			for _, f := range []netlab.Family{netlab.IPv4, netlab.IPv6} {
				want = append(want, `(?m)^  agent/`+regexp.QuoteMeta(p.Name)+` +`+regexp.QuoteMeta(p.Spec.NodeName)+` +- +`+
					regexp.QuoteMeta(netlab.RouterAddr(f).String())+` +established `)
			}
		}
		cp.WaitStatus(t, []string{"-n", chartNamespace}, want...)
		// Each agent's Lease is its pod's: the garbage collector deletes
		// it with the pod.
		for _, p := range agents {
			l, err := client.CoordinationV1().Leases(chartNamespace).Get(ctx, sessions.LeaseName(p.Name), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if o := l.OwnerReferences; len(o) != 1 || o[0].Kind != "Pod" || o[0].UID != p.UID {
				t.Errorf("Lease %s is owned by %+v, want the pod %s (%s)", l.Name, o, p.Name, p.UID)
			}
		}
	})

	t.Run("pod on the worker from the control-plane node's pod network", func(t *testing.T) {
		ns := framework.NewNamespace(t, client, framework.NamespaceName(t), framework.ReleaseServices(30*time.Second))
		defaultServiceAccount(t, ns)
		createDeployment(t, ns, echoDeployment("echo", 1, []string{worker.Name}))
		t.Cleanup(func() {
			ctx := context.Background()
			_ = client.AppsV1().Deployments(ns).Delete(ctx, "echo", metav1.DeleteOptions{})
			_ = client.AppsV1().ReplicaSets(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "app=echo"})
			deletePods(ns)
		})
		pod := waitPods(t, ns, "echo", 1)[0]
		// From an address of the control-plane node's pod CIDR (not on
		// its segment): the reply to it needs that node's pod route too.
		// Far from the start of the CIDR, which the CNI bridge and its
		// pods use.
		for _, fam := range []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol} {
			dst := netip.MustParseAddr(podIP(pod, fam))
			src := podCIDROf(t, cpNode.Name, dst.Is4()).Addr()
			for range 250 {
				src = src.Next()
			}
			if err := lab.AddLoopbackVIP(0, src); err != nil {
				t.Fatal(err)
			}
			out, err := lab.Exec(lab.Nodes[0], "curl", "-sS", "--max-time", "5", "--interface", src.String(),
				"http://"+netip.AddrPortFrom(dst, 8080).String()+"/")
			if err != nil || !strings.Contains(out, worker.Name) || !strings.Contains(out, src.String()) {
				t.Errorf("%s -> pod %s on %s: %q, %v; want the worker's echo, seeing %s", src, dst, worker.Name, out, err, src)
			}
		}
	})

	t.Run("helm upgrade applies a pool at once, and a peer with a restart", func(t *testing.T) {
		upgradeApplies(t, lab, ccmImage.Ref, names)
	})

	checkPodLog(t, cpNode, ccmPod, chartName)
	for _, p := range agents {
		n := nodes[nodeIndex(nodes, p.Spec.NodeName)]
		checkPodLog(t, n, p, agentName)
		// No L2 pool here: the agent (the image's, built without cgo)
		// dropped the CAP_NET_RAW its container may have.
		if !podLogHas(t, n, p, agentName, "CAP_NET_RAW dropped for good") {
			t.Errorf("agent pod %s on %s did not drop CAP_NET_RAW, which no L2 pool needs", p.Name, n.Name)
		}
	}
}

// podLogHas reports whether a line of the container's log on node n has s.
func podLogHas(t *testing.T, n *framework.RealNode, p *v1.Pod, container, s string) bool {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(n.PodLogsDir(), p.Namespace+"_"+p.Name+"_"+string(p.UID), container, "*.log"))
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), s) { //nolint:gosec // the node's pod logs
			return true
		}
	}
	return false
}

func networkUnavailable(n *v1.Node) *v1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == v1.NodeNetworkUnavailable {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// podCIDROf is the node's pod CIDR of a family.
func podCIDROf(t *testing.T, name string, v4 bool) netip.Prefix {
	t.Helper()
	n, err := client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range n.Spec.PodCIDRs {
		if p, err := netip.ParsePrefix(c); err == nil && p.Addr().Is4() == v4 {
			return p
		}
	}
	t.Fatalf("node %s has no pod CIDR of the family (IPv4 %v): %v", name, v4, n.Spec.PodCIDRs)
	return netip.Prefix{}
}

// waitAgentPods waits until the agents' DaemonSet runs one Ready pod on
// each of the nodes.
func waitAgentPods(t *testing.T, nodes []string) []*v1.Pod {
	t.Helper()
	sel := metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + agentName}
	var pods []v1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := client.CoreV1().Pods(chartNamespace).List(ctx, sel)
		if err != nil {
			return false, nil //nolint:nilerr // retried
		}
		pods = l.Items
		var on []string
		for i := range pods {
			if pods[i].DeletionTimestamp == nil && podReady(&pods[i]) {
				on = append(on, pods[i].Spec.NodeName)
			}
		}
		slices.Sort(on)
		return slices.Equal(on, slices.Sorted(slices.Values(nodes))), nil
	})
	if err != nil {
		var states []string
		for _, p := range pods {
			states = append(states, fmt.Sprintf("%s on %q: %s %v %v", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.Conditions, p.Status.ContainerStatuses))
		}
		t.Fatalf("the agents' DaemonSet has no Ready pod on each of %v: %v; pods %v", nodes, err, states)
	}
	out := make([]*v1.Pod, len(pods))
	for i := range pods {
		out[i] = &pods[i]
	}
	return out
}

// checkAgentPodSpec checks what an agent runs with: its own ServiceAccount,
// the node's network, non-root, no capabilities, a read-only root, and a
// readiness probe on /readyz.
func checkAgentPodSpec(t *testing.T, p *v1.Pod) {
	t.Helper()
	s := p.Spec
	if s.ServiceAccountName != agentName {
		t.Errorf("agent pod %s: serviceAccountName %q, want %s", p.Name, s.ServiceAccountName, agentName)
	}
	if !s.HostNetwork {
		t.Errorf("agent pod %s: hostNetwork is false", p.Name)
	}
	if s.SecurityContext == nil || !ptr.Deref(s.SecurityContext.RunAsNonRoot, false) {
		t.Errorf("agent pod %s: securityContext %+v, want runAsNonRoot", p.Name, s.SecurityContext)
	}
	if len(s.Containers) != 1 {
		t.Fatalf("agent pod %s: want one container, have %d", p.Name, len(s.Containers))
	}
	c := s.Containers[0]
	sc := c.SecurityContext
	// CAP_NET_RAW alone may be had, whatever the config (an L2 pool added
	// later works); without an L2 pool the agent drops it at start
	// (checkPodLog's caller looks for the line that says so).
	if sc == nil || !ptr.Deref(sc.ReadOnlyRootFilesystem, false) || sc.Capabilities == nil ||
		!slices.Contains(sc.Capabilities.Drop, "ALL") || !slices.Equal(sc.Capabilities.Add, []v1.Capability{"NET_RAW"}) {
		t.Errorf("agent pod %s: container securityContext %+v, want a read-only root and the capability NET_RAW alone", p.Name, sc)
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("agent pod %s: readiness probe %+v, want GET /readyz", p.Name, c.ReadinessProbe)
	}
}

// upgradeApplies runs helm upgrade as a user changing the config would: a
// pool added applies without a restart (the agents' containers keep their
// restart counts, and the pool's address is announced from every node);
// the IPv6 peer removed and added again restarts the agents by themselves
// (their containers' restart counts grow), and the router's IPv6 sessions
// with the nodes go, then come back.
func upgradeApplies(t *testing.T, lab *netlab.Lab, ref string, nodes []string) {
	values := map[string]any{"agent": map[string]any{"enabled": true}}
	before := agentRestarts(t)
	added := "  - {name: added, addresses: [198.18.114.0/24]}\n"
	upgradeChart(t, ref, agentsCloudConfigWith(added, true), values)
	ns := framework.NewNamespace(t, client, framework.NamespaceName(t), framework.ReleaseServices(30*time.Second))
	framework.CreateLoadBalancer(t, client, ns, "added", framework.WithAnnotation("metal-ccm.io/pool", "added"))
	vip := waitVIPs(t, ns, "added", 1)[0]
	if !netip.MustParsePrefix("198.18.114.0/24").Contains(vip) {
		t.Fatalf("address %s is not of the added pool", vip)
	}
	lab.RequireRoute(t, netlab.HostPrefix(vip), lab.NodeAddrs(netlab.IPv4)...)
	if now := agentRestarts(t); !maps.Equal(now, before) {
		t.Errorf("agents' container restarts after a pool was added: %v, were %v", now, before)
	}

	v6 := lab.NodeAddrs(netlab.IPv6)
	upgradeChart(t, ref, agentsCloudConfigWith(added, false), values)
	waitSessions(t, lab, v6, false)
	// Each agent back and ready with the first change before the second:
	// an agent whose container is still in the kubelet's back-off when
	// the second change lands starts with the final config and has
	// nothing to restart for.
	waitRestarted(t, nodes, before, 1)
	upgradeChart(t, ref, agentsCloudConfigWith(added, true), values)
	waitSessions(t, lab, v6, true)
	now := waitRestarted(t, nodes, before, 2)
	t.Logf("helm upgrade: the added pool's %s announced from every node without a restart; the IPv6 peer removed and added again, each agent restarted by itself (restarts %v, were %v)", vip, now, before)
}

// waitRestarted waits until each node's agent has restarted n more times
// than before and its container is ready again, within 2 minutes (an agent
// restarts after a random wait of up to 15 s, its container after the
// kubelet's back-off, and the kubelet reports a restart at its next sync
// of the pod).
func waitRestarted(t *testing.T, nodes []string, before map[string]int32, n int32) map[string]int32 {
	t.Helper()
	var now map[string]int32
	var ready map[string]bool
	done := func(context.Context) (bool, error) {
		now, ready = agentRestarts(t), agentsReady(t)
		for _, node := range nodes {
			if now[node] < before[node]+n || !ready[node] {
				return false, nil
			}
		}
		return true, nil
	}
	if wait.PollUntilContextTimeout(context.Background(), time.Second, 2*time.Minute, true, done) != nil {
		t.Fatalf("agents' container restarts %v (ready %v), were %v; want %d more each, ready", now, ready, before, n)
	}
	return now
}

// agentsReady says, by node, whether the agent's containers are all ready.
func agentsReady(t *testing.T) map[string]bool {
	t.Helper()
	l, err := client.CoreV1().Pods(chartNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + agentName})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, p := range l.Items {
		ok := len(p.Status.ContainerStatuses) > 0
		for _, c := range p.Status.ContainerStatuses {
			ok = ok && c.Ready
		}
		out[p.Spec.NodeName] = ok
	}
	return out
}

// agentRestarts are the agents' container restart counts, by node.
func agentRestarts(t *testing.T) map[string]int32 {
	t.Helper()
	l, err := client.CoreV1().Pods(chartNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + agentName})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int32{}
	for _, p := range l.Items {
		for _, c := range p.Status.ContainerStatuses {
			out[p.Spec.NodeName] += c.RestartCount
		}
	}
	return out
}

// waitSessions waits until the router's sessions with addrs are all
// established (up) or none is (down), within 2 minutes: an agent restarts
// after a random wait of up to 15 s, and its container after the kubelet's
// back-off.
func waitSessions(t *testing.T, lab *netlab.Lab, addrs []netip.Addr, up bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		st, err := lab.SessionStates()
		if err != nil {
			return false, nil //nolint:nilerr // retried
		}
		for _, a := range addrs {
			if (st[a] == "Established") != up {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("router's sessions with %v not all %s: %v", addrs, map[bool]string{true: "established", false: "down"}[up], err)
	}
}
