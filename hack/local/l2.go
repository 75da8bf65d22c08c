package main

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/metal-ccm/metal-ccm/pkg/annotation"
	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// l2NodeCount is the number of real nodes of `up --l2`: the smallest
// cluster in which one node's failure leaves the others a majority, so the
// addresses move at once (docs/l2.md, the majority rule).
const l2NodeCount = 3

// l2AgentTokenLifetime is how long the agents' ServiceAccount token is
// valid: longer than any local run (the local API server sets no maximum).
// An agent whose token expired could no longer read the Services.
const l2AgentTokenLifetime = 7 * 24 * time.Hour

// l2Nodes are the real nodes of `up --l2`: node-1 ... on the L2 lab's node
// addresses (198.18.125.11 and 2001:db8:125::11 upwards).
func l2Nodes() []localNode {
	out := make([]localNode, l2NodeCount)
	for i := range out {
		out[i] = localNode{name: fmt.Sprintf("node-%d", i+1),
			ip: netlab.L2NodeAddr(netlab.IPv4, i).String() + "," + netlab.L2NodeAddr(netlab.IPv6, i).String()}
	}
	return out
}

// l2CloudConfig is the cloud-config of the CCM and the agents: the L2 lab's
// pool (198.18.125.200-207 and 2001:db8:125::200-207, announced with L2
// only, its membership keyed with keyFile) and a zone for the segment's
// nodes.
func l2CloudConfig(keyFile string) string {
	return netlab.L2CloudConfig(keyFile, fmt.Sprintf(`nodes:
  topology:
  - {subnet: %s, region: home, zone: home-lan}
  - {subnet: %q, region: home, zone: home-lan}
`, netlab.L2Subnet(netlab.IPv4), netlab.L2Subnet(netlab.IPv6).String()))
}

// l2Run is what `up --l2` started, for stop to undo.
type l2Run struct {
	dir      string
	lab      *netlab.L2Lab
	cp       *framework.ControlPlane
	nodes    []*framework.RealNode
	ccm      *framework.CCM
	agents   []*framework.Process
	stopping atomic.Bool
}

// processes are the processes `down` may stop by PID if this one died
// without cleaning up: the control plane, the CCM and the agents.
func (r *l2Run) processes() []*framework.Process {
	ps := r.cp.Processes()
	if r.ccm != nil {
		ps = append(ps, r.ccm.Process)
	}
	return append(ps, r.agents...)
}

// stop stops everything, in the reverse order of its start: the agents
// first (they stop answering and leave the membership), the CCM (it runs
// on node-1's network, through its API relay), the nodes with their pods,
// the control plane, then the lab's namespaces, each deleted by name.
func (r *l2Run) stop() {
	r.stopping.Store(true)
	for i := len(r.agents) - 1; i >= 0; i-- {
		r.agents[i].Stop(5 * time.Second)
	}
	if r.ccm != nil {
		r.ccm.Stop(5 * time.Second)
	}
	stopRealNodes(r.dir, r.nodes)
	if r.cp != nil {
		r.cp.Stop()
	}
	if r.lab != nil {
		if err := r.lab.Close(); err != nil {
			fmt.Printf("L2 lab: %v\n", err)
		}
	}
	_ = os.Remove(pidFile(r.dir))
}

// upL2 runs `up --l2` in the foreground: the L2 lab (a bridge as the switch,
// three node namespaces and a client namespace on it, no router), a real
// node in each node namespace, the CCM on the first node's network (its L2
// observer joins the agents' membership from there, as a replica on a node
// does), the real node agent on every node with its least-privilege
// identity, and the demo Service in front of hack/local/manifests/echo.yaml.
// It returns when the client reached the demo Service, then waits for
// Ctrl-C (or hack/local-down.sh) and cleans up.
func upL2(root, dir string) error {
	// Said at once rather than after a fallback: L2 without real nodes
	// and agents would answer nothing.
	if err := errors.Join(netlab.AvailableL2(), framework.RealNodesAvailable(), agentBinary()); err != nil {
		return fmt.Errorf("--l2: %w", err)
	}
	if err := claimDir(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()

	fmt.Println("Building the pause and echo images ...")
	archives, pauseRef, err := buildImages(ctx, root, dir)
	if err != nil {
		return err
	}
	key, err := netlab.WriteL2Key(dir)
	if err != nil {
		return err
	}
	cloudConfig := filepath.Join(dir, "cloud-config.yaml")
	if err := os.WriteFile(cloudConfig, []byte(l2CloudConfig(key)), 0o600); err != nil {
		return fmt.Errorf("write cloud-config: %w", err)
	}
	r := &l2Run{dir: dir}
	if err := r.start(ctx, cloudConfig, archives, pauseRef); err != nil {
		fmt.Println("Stopping what started ...")
		r.stop()
		return err
	}
	fmt.Println("\nRunning. Press Ctrl-C (or run hack/local-down.sh) to stop and clean up.")
	go r.watchAgents(ctx)
	select {
	case <-ctx.Done():
	case <-r.ccm.Done():
		fmt.Printf("metal-cloud-controller-manager exited; its log ends with:\n%s\n", lastLines(r.ccm.Log(), 20))
	}
	fmt.Println("Stopping ...")
	r.stop()
	fmt.Println("Stopped.")
	return nil
}

// agentBinary says why the built node agent is missing, or nil.
func agentBinary() error {
	_, err := framework.Binary("metal-node-agent")
	return err
}

// start brings the L2 cluster up, step by step; on error what started is
// in r for stop.
func (r *l2Run) start(ctx context.Context, cloudConfig string, archives []string, pauseRef string) error {
	fmt.Printf("Starting the L2 lab: a switch (a bridge), %d node namespaces and a client namespace on one segment, no router ...\n", l2NodeCount)
	lab, err := netlab.StartL2(netlab.L2Options{
		Nodes: l2NodeCount,
		// Linux solicits the client's MAC for a forwarded packet (kube-proxy
		// sending a pod's answer back) only from a link-local address.
		LinkLocal: true,
	})
	if err != nil {
		return err
	}
	r.lab = lab
	fmt.Printf("L2 lab: switch %s, client %s (%s, %s), nodes %s\n", lab.Switch, lab.Client,
		netlab.L2ClientAddr(netlab.IPv4), netlab.L2ClientAddr(netlab.IPv6), strings.Join(lab.Nodes, ", "))

	fmt.Println("Starting etcd, kube-apiserver, kube-controller-manager (every controller) and kube-scheduler on 127.0.0.1 ...")
	if r.cp, err = framework.StartControlPlane(ctx, framework.Options{Dir: r.dir, KCM: true, RealNodes: true}); err != nil {
		return err
	}
	// Recorded at once, so that hack/local-down.sh can ask this process to
	// stop while it is still starting.
	if err := writePIDs(r.dir, false, r.processes()); err != nil {
		return err
	}
	cs, err := r.cp.Client()
	if err != nil {
		return err
	}
	list := l2Nodes()
	readyAt := watchReady(ctx, cs, len(list))
	r.nodes, err = launchRealNodes(ctx, r.cp, list, lab.Nodes, archives, pauseRef)
	if err != nil {
		return err
	}

	// The CCM where a replica runs: on a node, reaching the others on the
	// segment. kube-controller-manager allocates the pod CIDRs, and with no
	// router there is no route to configure: the nodes route each other's
	// pod CIDRs themselves (below).
	if r.ccm, err = r.cp.StartCCM(ctx, framework.CCMOptions{
		Name: "metal-cloud-controller-manager", CloudConfig: cloudConfig, NetNS: lab.Nodes[0],
		Kubeconfig: r.nodes[0].Kubeconfig(),
		// The product's default: the nodes' kube-proxy is checked.
		HealthChecks: true,
		Args:         []string{"--allocate-node-cidrs=false", "--configure-cloud-routes=false"},
	}); err != nil {
		return err
	}
	if err := writePIDs(r.dir, false, r.processes()); err != nil {
		return err
	}
	fmt.Printf("Started metal-cloud-controller-manager (pid %d) in %s, log %s\n", r.ccm.PID(), lab.Nodes[0], r.ccm.LogPath)

	if _, err := waitNodes(ctx, cs, len(list), readyAt); err != nil {
		return err
	}
	printRealNodeUsage(r.nodes, readyAt)
	cidrs, err := waitPodCIDRs(ctx, cs, r.nodes)
	if err != nil {
		return err
	}
	if err := lab.RoutePodCIDRs(cidrs); err != nil {
		return err
	}
	if err := r.startAgents(ctx, cloudConfig); err != nil {
		return err
	}
	if err := writePIDs(r.dir, false, r.processes()); err != nil {
		return err
	}

	manifest := filepath.Join(framework.RepoRoot(), "hack", "local", "manifests", "echo.yaml")
	if _, err := r.cp.Kubectl(ctx, "apply", "-f", manifest); err != nil {
		return err
	}
	vips, err := demoService(ctx, cs, l2DemoSpec())
	if err != nil {
		return err
	}
	answers, err := r.waitDemo(ctx, vips)
	if err != nil {
		return err
	}
	r.printHelp(ctx, cs, vips, answers)
	return nil
}

// waitPodCIDRs waits until every node has a pod CIDR of each family
// (kube-controller-manager allocates them as a node registers) and returns
// them, by node.
func waitPodCIDRs(ctx context.Context, cs kubernetes.Interface, rn []*framework.RealNode) ([][]netip.Prefix, error) {
	out := make([][]netip.Prefix, len(rn))
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		for i, n := range rn {
			node, err := cs.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
			if err != nil || len(node.Spec.PodCIDRs) < 2 {
				return false, nil //nolint:nilerr // keep polling
			}
			out[i] = out[i][:0]
			for _, s := range node.Spec.PodCIDRs {
				p, err := netip.ParsePrefix(s)
				if err != nil {
					return false, fmt.Errorf("node %s: pod CIDR %q: %w", n.Name, s, err)
				}
				out[i] = append(out[i], p)
			}
		}
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("wait for the nodes' pod CIDRs: %w", err)
	}
	return out, nil
}

// startAgents starts the real node agent in every node's namespace, with
// the least-privilege identity the chart gives it (read Services, Nodes and
// EndpointSlices, create Events), through its node's API relay.
func (r *l2Run) startAgents(ctx context.Context, cloudConfig string) error {
	token, err := r.cp.CreateNodeAgentToken(ctx, l2AgentTokenLifetime)
	if err != nil {
		return err
	}
	for _, n := range r.nodes {
		kc := filepath.Join(r.dir, "agent-kubeconfig-"+n.Name)
		if err := n.WriteKubeconfig(kc, framework.NodeAgentName, token); err != nil {
			return fmt.Errorf("node agent of %s: %w", n.Name, err)
		}
		name := "metal-node-agent-" + n.Name
		p, err := framework.StartNodeAgent(framework.NodeAgentOptions{
			Name: name, LogPath: filepath.Join(r.dir, "logs", name+".log"),
			NetNS: n.NetNS, Node: n.Name, Kubeconfig: kc, CloudConfig: cloudConfig,
		})
		if err != nil {
			return fmt.Errorf("node agent of %s: %w", n.Name, err)
		}
		r.agents = append(r.agents, p)
		fmt.Printf("Started %s (pid %d) in %s, log %s\n", name, p.PID(), n.NetNS, p.LogPath)
	}
	return nil
}

// watchAgents says when an agent exits on its own (its addresses move to
// the other nodes; the run goes on).
func (r *l2Run) watchAgents(ctx context.Context) {
	for _, a := range r.agents {
		go func() {
			select {
			case <-ctx.Done():
			case <-a.Done():
				if !r.stopping.Load() {
					fmt.Printf("%s exited (%v); its log ends with:\n%s\n", a.Name, a.Err(), lastLines(a.Log(), 20))
				}
			}
		}()
	}
}

// l2DemoSpec is the demo Service in front of the echo Deployment: both
// families, so that the client resolves an address with ARP and one with
// NDP.
func l2DemoSpec() v1.ServiceSpec {
	return v1.ServiceSpec{
		Type: v1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "echo"},
		IPFamilyPolicy: ptr.To(v1.IPFamilyPolicyPreferDualStack),
		Ports:          []v1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
	}
}

// l2DemoTimeout bounds the wait for the echo pods to start and the client's
// first answer through a node's kube-proxy.
const l2DemoTimeout = 3 * time.Minute

// waitDemo waits until every address of the demo answers the client (the
// echo pods running, the agents answering for the address, kube-proxy
// forwarding), and returns an answer per address.
func (r *l2Run) waitDemo(ctx context.Context, vips []string) ([]string, error) {
	fmt.Printf("\nWaiting for the echo pods and for the client (%s) to reach the demo on every address ...\n", r.lab.Client)
	answers := make([]string, len(vips))
	for i, s := range vips {
		vip, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("demo address %q: %w", s, err)
		}
		var last error
		err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, l2DemoTimeout, true, func(ctx context.Context) (bool, error) {
			rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			answers[i], last = r.lab.ClientGet(rctx, netlab.VIPURL(vip))
			return last == nil, nil
		})
		if err != nil && last != nil {
			return nil, fmt.Errorf("the client does not reach %s: %w (last: %w)", netlab.VIPURL(vip), err, last)
		}
		if err != nil {
			return nil, fmt.Errorf("the client does not reach %s: %w", netlab.VIPURL(vip), err)
		}
	}
	return answers, nil
}

// printHelp says what runs where and how to reach the demo from the client.
func (r *l2Run) printHelp(ctx context.Context, cs kubernetes.Interface, vips, answers []string) {
	kubectl := filepath.Join(framework.BinDir(), "kubectl")
	fmt.Printf("\nKubeconfig: %s\n  export KUBECONFIG=%s\n  %s get nodes -o wide -L topology.kubernetes.io/zone\n",
		r.cp.AdminKubeconfig, r.cp.AdminKubeconfig, kubectl)
	fmt.Printf("Logs: %s (the agents' metal-node-agent-NODE.log)\n", filepath.Join(r.dir, "logs"))
	fmt.Printf("\nL2, no router: the client and the nodes share one Ethernet segment, the bridge in %s.\n", r.lab.Switch)
	fmt.Printf("Each address is answered (ARP, NDP) by one node's agent, with that node's MAC:\n")
	fmt.Printf("  %-8s %-22s %-16s %-18s %s\n", "NODE", "NAMESPACE", "IPv4", "IPv6", "MAC")
	for i, n := range r.nodes {
		mac := "?"
		if m, err := r.lab.NodeMAC(i); err == nil {
			mac = m.String()
		}
		fmt.Printf("  %-8s %-22s %-16s %-18s %s\n", n.Name, n.NetNS, netlab.L2NodeAddr(netlab.IPv4, i), netlab.L2NodeAddr(netlab.IPv6, i), mac)
	}
	owners := waitL2Owners(ctx, cs, len(vips))
	if owners != "" {
		fmt.Printf("Answering (annotation %s): %s\n", annotation.L2Nodes, owners)
	}
	fmt.Printf("\nThe demo Service default/demo (the echo pods of hack/local/manifests/echo.yaml, spread over the nodes) answered the client:\n")
	for i, vip := range vips {
		fmt.Printf("  %s -> %s\n", vip, strings.TrimSpace(answers[i]))
	}
	fmt.Printf("Try, as root:\n")
	for _, vip := range vips {
		fmt.Printf("  ip netns exec %s curl -s %s\n", r.lab.Client, demoURL(vip))
	}
	fmt.Printf(`  ip -n %s neigh show dev %s     # the MAC each address resolved to: its node's
  %s get service demo -o jsonpath='{.metadata.annotations.metal-ccm\.io/l2-nodes}'
  %s describe service demo          # Events: L2NodeChanged
`, r.lab.Client, netlab.NodeLink, kubectl, kubectl)
	i, note := r.failoverNode(owners)
	fmt.Printf("  ip -n %s link set n%d down         # %s off the segment: the addresses it answers move in 1-2 s%s\n  ip -n %s link set n%d up           # back\n",
		r.lab.Switch, i, r.nodes[i].Name, note, r.lab.Switch, i)
}

// demoURL is the demo's URL at address vip, as curl takes it (an IPv6
// address in brackets, no port).
func demoURL(vip string) string {
	if strings.Contains(vip, ":") {
		return "http://[" + vip + "]/"
	}
	return "http://" + vip + "/"
}

// failoverNode picks the node whose link to take down to watch a failover
// (by index, the switch's port n<i>): one that answers for an address of
// owners (the l2-nodes annotation) and does not run the CCM, whose
// observer, cut off with its node, would keep its last view. If only the
// CCM's node answers, it is that one, with a note saying so.
func (r *l2Run) failoverNode(owners string) (int, string) {
	answering := map[string]bool{}
	for _, e := range strings.Split(owners, ",") {
		if _, node, ok := strings.Cut(e, "="); ok && node != "" {
			answering[node] = true
		}
	}
	for i := len(r.nodes) - 1; i > 0; i-- {
		if answering[r.nodes[i].Name] {
			return i, ""
		}
	}
	return 0, fmt.Sprintf(" (the annotation keeps its last view meanwhile: the CCM runs on %s)", r.nodes[0].Name)
}

// waitL2Owners waits up to 30 s for the CCM to write, on the demo Service,
// which node answers for each of its n addresses, and returns the
// annotation ("" if it did not come).
func waitL2Owners(ctx context.Context, cs kubernetes.Interface, n int) string {
	var got string
	_ = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		s, err := cs.CoreV1().Services("default").Get(ctx, "demo", metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // keep polling
		}
		got = s.Annotations[annotation.L2Nodes]
		// Every address with a node: "a=node-x,b=node-y", none "a=".
		entries := strings.Split(got, ",")
		if got == "" || len(entries) < n {
			return false, nil
		}
		for _, e := range entries {
			if strings.HasSuffix(e, "=") {
				return false, nil
			}
		}
		return true, nil
	})
	return got
}
