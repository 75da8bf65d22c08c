package netlab

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/metal-ccm/metal-ccm/test/framework"
)

// L2ClusterOptions describe an L2 cluster: what its real nodes run and
// the CCM's and agents' cloud-config.
type L2ClusterOptions struct {
	CP     *framework.ControlPlane
	Client kubernetes.Interface
	// Prefix names the nodes: Prefix0, Prefix1, Prefix2.
	Prefix string
	// Images and SandboxImage are the nodes' images (images.BuildNodeImages).
	Images       []string
	SandboxImage string
	// CloudConfig is the path of the cloud-config of the CCM and the agents.
	CloudConfig string
	// LeaseName is the CCM's leader-election lease, apart from other CCMs'.
	LeaseName string
	// Nodes is how many node namespaces the lab has (at least the three of
	// the real nodes): the rest are for AddAgents.
	Nodes int
}

// L2Cluster is an L2 lab with a real node in each node namespace
// (containerd, kubelet, kube-proxy), the CCM on the first node's network as
// a replica runs on a node (its L2 observer joins the agents' membership
// from there), and the real node agent on each node with its
// least-privilege identity: the cluster of a user of L2, without a router.
type L2Cluster struct {
	*L2Lab
	RealNodes []*framework.RealNode
	// Agents are the node agents by node index: the real nodes' first,
	// then those AddAgents started.
	Agents []*framework.NodeAgent

	opts  L2ClusterOptions
	token string // the agents' ServiceAccount token
}

// l2RealNodes is how many real nodes an L2 cluster has.
const l2RealNodes = 3

// StartL2Cluster starts an L2 cluster of three nodes; the test's cleanup
// stops it. The nodes route each other's pod CIDRs over the segment, as a
// flat network without a router needs them.
func StartL2Cluster(t *testing.T, o L2ClusterOptions) *L2Cluster {
	t.Helper()
	c := &L2Cluster{L2Lab: NewL2(t, L2Options{Nodes: max(l2RealNodes, o.Nodes), LinkLocal: true}), opts: o}
	ctx := context.Background()
	for i := range l2RealNodes {
		name := fmt.Sprintf("%s%d", o.Prefix, i)
		t.Cleanup(func() { _ = o.Client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		c.RealNodes = append(c.RealNodes, o.CP.StartRealNode(ctx, t, framework.RealNodeOptions{
			Name: name, NetNS: c.Nodes[i], Images: o.Images, SandboxImage: o.SandboxImage,
			NodeIPs: []string{L2NodeAddr(IPv4, i).String(), L2NodeAddr(IPv6, i).String()},
		}))
	}
	// The health checks as the config has them (on by default): the agents
	// read the same file and check their own node's kube-proxy.
	o.CP.StartCCMForTest(t, framework.CCMOptions{Name: "ccm-" + o.Prefix, CloudConfig: o.CloudConfig, NetNS: c.Nodes[0], HealthChecks: true,
		Kubeconfig: c.RealNodes[0].Kubeconfig(), Args: []string{
			"--leader-elect-resource-name", o.LeaseName, "--allocate-node-cidrs=false",
			"--configure-cloud-routes=false", "--node-monitor-period", "1s",
		}})
	cidrs := make([][]netip.Prefix, len(c.RealNodes))
	for i, n := range c.RealNodes {
		node := framework.WaitNode(t, o.Client, n.Name, time.Minute, func(node *v1.Node) bool {
			return !framework.Uninitialized(node) && nodeReady(node) && len(node.Spec.PodCIDRs) == 2 &&
				!slices.ContainsFunc(node.Spec.Taints, func(t v1.Taint) bool { return t.Key == v1.TaintNodeNotReady })
		})
		for _, s := range node.Spec.PodCIDRs {
			cidrs[i] = append(cidrs[i], netip.MustParsePrefix(s))
		}
	}
	if err := c.RoutePodCIDRs(cidrs); err != nil {
		t.Fatal(err)
	}
	c.token = o.CP.NodeAgentToken(t)
	dir := t.TempDir()
	for i, n := range c.RealNodes {
		c.startAgent(t, i, n.Name, dir)
	}
	return c
}

// AgentAPIPort is where an L2 cluster's agents reach the API server in
// their node's namespace: a relay of their own, apart from the kubelet's
// and kube-proxy's (framework.APIPort), so that CutAgentFromAPI cuts the
// agent alone.
const AgentAPIPort = 6444

// agentEnv speeds up the agents' finding of a hung connection to the API
// server (client-go's HTTP/2 health check: a ping after 2 s without a
// frame, failed after 2 s more; about 45 s by default), so that a cut
// from the API server shows within seconds in the tests.
var agentEnv = []string{"HTTP2_READ_IDLE_TIMEOUT_SECONDS=2", "HTTP2_PING_TIMEOUT_SECONDS=2"}

// startAgent starts the node agent of node i, named name, with its API
// relay, kubeconfig (in dir) and log.
func (c *L2Cluster) startAgent(t testing.TB, i int, name, dir string) {
	t.Helper()
	relay, err := c.opts.CP.RelayAPIServerOn(c.Nodes[i], AgentAPIPort)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(relay.Close)
	kc := filepath.Join(dir, fmt.Sprintf("agent-kubeconfig-%d", i))
	if err := relay.WriteKubeconfig(kc, framework.NodeAgentName, c.token); err != nil {
		t.Fatal(err)
	}
	c.Agents = append(c.Agents, framework.StartNodeAgentForTest(t, framework.NodeAgentOptions{
		Name: "agent-" + name, LogPath: filepath.Join(c.opts.CP.Dir, "logs", "agent-"+name+".log"),
		NetNS: c.Nodes[i], Node: name, Kubeconfig: kc, CloudConfig: c.opts.CloudConfig, Env: agentEnv,
		// As the chart runs them: the witness is there, used only while
		// exactly two agents are expected.
		Args: []string{"--l2-witness-lease", framework.L2WitnessLease},
	}))
}

func nodeReady(n *v1.Node) bool {
	return slices.ContainsFunc(n.Status.Conditions, func(c v1.NodeCondition) bool {
		return c.Type == v1.NodeReady && c.Status == v1.ConditionTrue
	})
}

// WaitMAC waits until the client resolves vip to node i's MAC, and
// returns how long it took (L2Lab.WaitClientMAC, with requests to vip).
func (c *L2Cluster) WaitMAC(t testing.TB, vip netip.Addr, i int, within time.Duration) time.Duration {
	t.Helper()
	return c.WaitClientMAC(t, vip, i, within, func(ctx context.Context) { _, _ = c.ClientGet(ctx, VIPURL(vip)) })
}

// WaitAnswers waits until vip answers the client ten times in a row (the
// nodes' kube-proxies program a Service each on its own sync).
func (c *L2Cluster) WaitAnswers(t testing.TB, vip netip.Addr) {
	t.Helper()
	inARow := 0
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if _, err := c.ClientGet(rctx, VIPURL(vip)); err != nil {
			inARow = 0
			return false, nil
		}
		inARow++
		return inARow >= 10, nil
	})
	if err != nil {
		t.Fatalf("%s does not answer the client ten times in a row: %v", vip, err)
	}
}

// CloudConfig is the path of the config file the CCM and the agents read:
// a test that rewrites it changes the config as a user would.
func (c *L2Cluster) CloudConfig() string { return c.opts.CloudConfig }

// AgentReady reports whether node i's agent answers ready on its status
// port (read with curl in the node's namespace).
func (c *L2Cluster) AgentReady(ctx context.Context, i int) bool {
	_, err := c.NodeRun(ctx, i, "curl", "-sf", "--max-time", "2", "http://127.0.0.1:10263/readyz")
	return err == nil
}
