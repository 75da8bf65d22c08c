package framework

import (
	"errors"
	"path/filepath"
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
