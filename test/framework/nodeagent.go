package framework

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// NodeAgentOptions describe a metal-node-agent process in a node's network
// namespace.
type NodeAgentOptions struct {
	// Name names the process in logs and errors. Required.
	Name string
	// LogPath is where its output goes. Required.
	LogPath string
	// NetNS is the network namespace (a name under /run/netns). Required.
	NetNS string
	// Node is the agent's --node-name. Required.
	Node string
	// Kubeconfig and CloudConfig are the agent's files. Required.
	Kubeconfig, CloudConfig string
	// Env, as NAME=value, is added to the agent's environment.
	Env []string
	// Args are more flags (e.g. --bind-address).
	Args []string
}

// StartNodeAgent starts the built metal-node-agent in o.NetNS with
// `nsenter --net` (and env(1) with o.Env), both of which exec: the PID of
// the returned process is the agent's, to be stopped by it. The agent logs
// at -v=2.
func StartNodeAgent(o NodeAgentOptions) (*Process, error) {
	if o.Name == "" || o.LogPath == "" || o.NetNS == "" || o.Node == "" || o.Kubeconfig == "" || o.CloudConfig == "" {
		return nil, errors.New("node agent: Name, LogPath, NetNS, Node, Kubeconfig and CloudConfig are required")
	}
	bin, err := Binary("metal-node-agent")
	if err != nil {
		return nil, err
	}
	args := []string{"--net=" + filepath.Join("/run/netns", o.NetNS), "--"}
	if len(o.Env) > 0 {
		args = append(append(args, "env"), o.Env...)
	}
	args = append(args, bin, "--kubeconfig", o.Kubeconfig, "--cloud-config", o.CloudConfig,
		"--node-name", o.Node, "--v", "2")
	return StartProcess(o.Name, o.LogPath, false, "nsenter", append(args, o.Args...)...)
}

// NodeAgentName names the node agent's ServiceAccount (kube-system), as
// deploy/node-agent/agent.yaml has it.
const NodeAgentName = "metal-node-agent"

// NodeAgentToken applies the node agent's least-privilege identity as the
// chart renders it (deploy/node-agent/agent-l2.yaml: read Services, Nodes and
// EndpointSlices, get and update the L2 witness Lease, write its own
// sessions Lease, which the admission policy there allows only with a token
// bound to its pod; its DaemonSet stays unscheduled where no DaemonSet
// controller runs), deleted when the test ends, and returns a
// token of its ServiceAccount.
func (cp *ControlPlane) NodeAgentToken(t testing.TB) string {
	t.Helper()
	// Registered first: the delete ignores what an apply that failed
	// did not create.
	t.Cleanup(func() {
		_, _ = cp.Kubectl(context.Background(), "delete", "--ignore-not-found", "-f", nodeAgentManifest())
	})
	token, err := cp.CreateNodeAgentToken(context.Background(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return token
}

// NodeAgent is a node agent started for a test: Restart starts it again
// (after a Kill, say) with the same options.
type NodeAgent struct {
	*Process
	opts NodeAgentOptions
}

// StartNodeAgentForTest starts an agent as StartNodeAgent does and stops it
// by its PID when the test ends; the test fails if the agent's log says it
// was refused something ("forbidden"), and the log's end is printed if the
// test failed.
func StartNodeAgentForTest(t testing.TB, o NodeAgentOptions) *NodeAgent {
	t.Helper()
	p, err := StartNodeAgent(o)
	if err != nil {
		t.Fatal(err)
	}
	a := &NodeAgent{Process: p, opts: o}
	t.Cleanup(func() {
		a.Stop(5 * time.Second)
		if t.Failed() {
			t.Logf("%s log, last %d lines:\n%s", a.Name, FailureLogLines, a.LogTail(FailureLogLines))
		}
		if a.LogContains("forbidden") {
			t.Errorf("%s was refused something:\n%s", a.Name, a.LogTail(20))
		}
	})
	return a
}

// Restart stops the agent if it still runs and starts it again.
func (a *NodeAgent) Restart() error {
	a.Stop(5 * time.Second)
	p, err := StartNodeAgent(a.opts)
	if err != nil {
		return err
	}
	a.Process = p
	return nil
}
