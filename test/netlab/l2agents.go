package netlab

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/metal-ccm/metal-ccm/pkg/nodes"
	"github.com/metal-ccm/metal-ccm/test/framework"
)

// AddAgents starts the node agent on n more of the lab's node namespaces
// (L2ClusterOptions.Nodes must leave room), each for a Node without a
// kubelet: the test registers it Ready with the namespace's addresses
// and renews its heartbeat Lease, and labels it excluded from load
// balancers, so that its agent counts in the majority and probes and is
// probed like any other while no address is ever its to answer (its node
// runs no kube-proxy either). A larger membership at the cost of an agent
// per member, not of a real node. It waits until the agent of node 0 sees
// every agent alive, and returns the new agents' node indexes. The test's
// cleanup stops them and deletes their Nodes.
func (c *L2Cluster) AddAgents(t *testing.T, n int) []int {
	t.Helper()
	first := len(c.Agents)
	if first+n > len(c.Nodes) {
		t.Fatalf("netlab L2: %d more agents on %d nodes, %d of them taken", n, len(c.Nodes), first)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // the Leases' renewals; registered first, so it runs last
	cs := c.opts.Client
	dir := t.TempDir()
	var added []int
	for i := first; i < first+n; i++ {
		name := fmt.Sprintf("%sx%d", c.opts.Prefix, i)
		t.Cleanup(func() { _ = cs.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		if _, err := framework.CreateReadyNode(ctx, cs, name, L2NodeAddr(IPv4, i).String(), L2NodeAddr(IPv6, i).String()); err != nil {
			t.Fatal(err)
		}
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:""}}}`, nodes.ExcludeLabel)
		if _, err := cs.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := framework.KeepNodeLease(ctx, cs, name); err != nil {
			t.Fatal(err)
		}
		c.startAgent(t, i, name, dir)
		added = append(added, i)
	}
	c.WaitMembers(t, len(c.Agents), time.Minute)
	return added
}

// WaitMembers waits until the agent of node 0 sees want agents alive in
// its membership (metal_ccm_agent_l2_members).
func (c *L2Cluster) WaitMembers(t testing.TB, want int, within time.Duration) {
	t.Helper()
	c.WaitAgentMembers(t, 0, want, within)
}

// WaitAgentMembers waits until node i's agent sees want agents alive.
func (c *L2Cluster) WaitAgentMembers(t testing.TB, i, want int, within time.Duration) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, within, true, func(ctx context.Context) (bool, error) {
		v, ok, err := c.AgentMetric(ctx, i, "metal_ccm_agent_l2_members")
		if err != nil {
			last = err.Error()
			return false, nil //nolint:nilerr // the agent may not listen yet: asked again
		}
		last = fmt.Sprintf("%v (reported: %t)", v, ok)
		return ok && int(v) == want, nil
	})
	if err != nil {
		t.Fatalf("node %d's agent does not see %d agents alive within %s: last %s", i, want, within, strings.TrimSpace(last))
	}
}

// AgentMetric is the value of the unlabelled metric name on the status port
// of node i's agent (read with curl in the node's namespace), and whether
// the agent reports it.
func (c *L2Cluster) AgentMetric(ctx context.Context, i int, name string) (float64, bool, error) {
	page, err := c.NodeRun(ctx, i, "curl", "-sS", "--max-time", "2", "http://127.0.0.1:10263/metrics")
	if err != nil {
		return 0, false, err
	}
	v, ok := framework.MetricValue(page, name)
	return v, ok, nil
}
