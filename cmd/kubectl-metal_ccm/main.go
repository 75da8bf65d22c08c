// Command kubectl-metal_ccm is a kubectl plugin: with the binary on the
// PATH, `kubectl metal-ccm status` shows what the cloud-controller-manager
// and its node agents do: which replica leads, the pools' used and free
// addresses, the BGP sessions of every replica and agent, which nodes carry
// LoadBalancer traffic (and why the others do not), and the Services not
// announced, with the reason. It reads only the API server, with the
// user's kubeconfig and RBAC (docs/operating.md).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/metal-ccm/metal-ccm/pkg/version"
)

func main() {
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := newRoot(os.Stdout).ExecuteContext(ctx)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(1)
	}
}

// options are the flags.
type options struct {
	kubeconfig, context, namespace string
	leaseName, configMap, output   string
	timeout                        time.Duration
}

func newRoot(out io.Writer) *cobra.Command {
	var o options
	root := &cobra.Command{
		Use:           "metal-ccm",
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl metal-ccm"},
		Short:         "What metal-ccm does in this cluster",
		Version:       version.String(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	pf := root.PersistentFlags()
	pf.StringVar(&o.kubeconfig, "kubeconfig", "", "the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
	pf.StringVar(&o.context, "context", "", "the kubeconfig context (default: its current context)")
	pf.StringVarP(&o.namespace, "namespace", "n", "kube-system", "the namespace metal-ccm is installed in (the chart's release namespace)")
	pf.DurationVar(&o.timeout, "request-timeout", 30*time.Second, "how long the whole status may take")
	status := &cobra.Command{
		Use:   "status",
		Short: "Leader, pools, BGP sessions, eligible nodes and pending Services",
		Long: "status reads the API server only, with your own RBAC: the leader-election Lease, the pods, " +
			"the cloud-config ConfigMap, the sessions' Leases the replicas and agents publish, the Nodes, " +
			"the Services and their conditions. It fails (exit 1) when no replica runs.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.status(cmd.Context(), out) },
	}
	sf := status.Flags()
	sf.StringVarP(&o.output, "output", "o", "", "output format: empty for text, or json")
	sf.StringVar(&o.leaseName, "lease-name", "cloud-controller-manager", "the leader-election Lease (--leader-elect-resource-name)")
	sf.StringVar(&o.configMap, "config-map", "metal-cloud-config", "the ConfigMap of the cloud-config (key "+configKey+")")
	root.AddCommand(status)
	return root
}

func (o *options) status(ctx context.Context, out io.Writer) error {
	if o.output != "" && o.output != "json" {
		return fmt.Errorf("--output %q: want json, or nothing for text", o.output)
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.context}).ClientConfig()
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	rc.UserAgent = "kubectl-metal_ccm/" + version.Version()
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	now := time.Now()
	st, err := source{cs: cs, namespace: o.namespace, leaseName: o.leaseName, configMap: o.configMap, now: now}.collect(ctx)
	if err != nil && !errors.Is(err, ErrNotRunning) {
		return err
	}
	if errors.Is(err, ErrNotRunning) {
		// The message alone: what is missing, and where to look.
		return err
	}
	if o.output == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	return render(out, st, now)
}
