// Command metal-node-agent runs on every node (the chart's agent DaemonSet):
// it announces the LoadBalancer addresses its own node carries, with each
// protocol that gives the node agents work (pkg/agent). It reads Services, Nodes
// and EndpointSlices and writes nothing but, with --l2-witness-lease, that
// one Lease; it serves /healthz and /metrics
// over plain HTTP on a loopback address of the node.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/component-base/cli"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/cli/globalflag"
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/agent"
	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/l2"
	"github.com/metal-ccm/metal-ccm/pkg/version"
)

// options are the agent's flags.
type options struct {
	kubeconfig  string
	cloudConfig string
	nodeName    string
	bindAddress string
	l2Witness   string
	daemonSet   string
}

func (o *options) flags() cliflag.NamedFlagSets {
	fss := cliflag.NamedFlagSets{}
	fs := fss.FlagSet("agent")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "Path to a kubeconfig; empty: the in-cluster configuration (the pod's ServiceAccount).")
	fs.StringVar(&o.cloudConfig, "cloud-config", "", "Path to the cloud-config, the same file the CCM reads. Required.")
	fs.StringVar(&o.nodeName, "node-name", os.Getenv("NODE_NAME"), "This node's name (default: $NODE_NAME, which the chart sets from spec.nodeName).")
	fs.StringVar(&o.bindAddress, "bind-address", "127.0.0.1:10263", "Address of /healthz and /metrics (plain HTTP: keep it on a loopback address).")
	fs.StringVar(&o.l2Witness, "l2-witness-lease", "", "NAMESPACE/NAME of the Lease that is the third vote of a two-node L2 cluster (docs/l2.md); the agent gets and updates it, and never creates it. Empty: no witness.")
	fs.StringVar(&o.daemonSet, "daemonset", "", "NAMESPACE/NAME of this agent's DaemonSet, read (get) when the agent stops, to tell a rolling update (sessions kept for graceful restart) from the agent removed from the node (a Cease); empty: only the node decides (docs/node-agent.md).")
	return fss
}

func main() {
	os.Exit(run())
}

func run() int {
	o := &options{}
	cmd := &cobra.Command{
		Use:   "metal-node-agent",
		Short: "Announces this node's LoadBalancer addresses (BGP with bgp.announceFrom Nodes, L2 for the pools announced so)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			// SIGTERM ends the agent: its BGP sessions end with a Cease
			// when the node stops serving, else with the process, so that
			// routers with graceful restart keep its paths until it is
			// back (a rolling update; pkg/agent stopping.go).
			ctx, cancel := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer cancel()
			return o.run(ctx)
		},
		SilenceUsage: true,
		Version:      version.String(),
	}
	cmd.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	fss := o.flags()
	globalflag.AddGlobalFlags(fss.FlagSet("global"), cmd.Name())
	for _, fs := range fss.FlagSets {
		cmd.Flags().AddFlagSet(fs)
	}
	return cli.Run(cmd)
}

func (o *options) run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	logger.Info("Starting", "version", version.Version(), "revision", version.Revision())
	if o.cloudConfig == "" || o.nodeName == "" {
		return errors.New("--cloud-config and --node-name (or $NODE_NAME) are required")
	}
	cfg, err := config.LoadFile(o.cloudConfig)
	if err != nil {
		return err
	}
	if cfg.BGP.HasInterfacePeer() {
		// A peer on an interface: the speaker announces the node on that
		// link with Router Advertisements, from a raw socket.
		if err := l2.RaiseNetRaw(); err != nil {
			logger.Info("No CAP_NET_RAW: a router that learns its unnumbered neighbours from Router Advertisements will not accept this node's sessions", "err", err)
		}
	} else if !cfg.LoadBalancer.HasProtocol(config.ProtocolL2) {
		// No raw socket without an L2 pool or a peer on an interface: the capability the pod may
		// grant (the chart's does, so that a pool added later works after
		// the restart it brings) goes for good. A binary built with cgo
		// (tests) cannot drop it from every thread, and keeps it.
		if had, _ := l2.HasNetRaw(); had {
			if err := l2.DropNetRaw(); err != nil {
				logger.Info("Cannot drop CAP_NET_RAW, which no L2 pool needs", "err", err)
			} else {
				logger.Info("No pool is announced with L2: CAP_NET_RAW dropped for good")
			}
		}
	}
	ctx, stopFor := context.WithCancelCause(ctx)
	defer stopFor(nil)
	rc, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return fmt.Errorf("client configuration: %w", err)
	}
	rc.UserAgent = "metal-node-agent"
	cs, err := agent.NewClient(rc)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	a := &agent.Agent{Config: cfg, Client: cs, NodeName: o.nodeName}
	if a.L2Witness, err = namespacedName("l2-witness-lease", o.l2Witness); err != nil {
		return err
	}
	if a.DaemonSet, err = namespacedName("daemonset", o.daemonSet); err != nil {
		return err
	}
	go watchConfig(ctx, o.cloudConfig, cfg, a.Reload, stopFor)
	srv, err := serveStatus(ctx, o.bindAddress, a)
	if err != nil {
		return err
	}
	defer func() { _ = srv.Close() }()
	err = a.Run(ctx)
	if cause := context.Cause(ctx); errors.Is(cause, config.ErrRestart) {
		logger.Info("Stopped to start again with the changed config", "cause", cause)
		return nil
	}
	if errors.Is(err, agent.ErrNotNodes) {
		// Not an error: the same DaemonSet may run while the replicas
		// announce; it waits for a restart with another config.
		logger.Info("Idle", "reason", err)
		<-ctx.Done()
		if cause := context.Cause(ctx); errors.Is(cause, config.ErrRestart) {
			logger.Info("Stopped to start again with the changed config", "cause", cause)
		}
		return nil
	}
	return err
}

// namespacedName reads a NAMESPACE/NAME flag; empty is the zero name.
func namespacedName(flag, v string) (types.NamespacedName, error) {
	if v == "" {
		return types.NamespacedName{}, nil
	}
	ns, name, ok := strings.Cut(v, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return types.NamespacedName{}, fmt.Errorf("--%s %q: want NAMESPACE/NAME", flag, v)
	}
	return types.NamespacedName{Namespace: ns, Name: name}, nil
}
