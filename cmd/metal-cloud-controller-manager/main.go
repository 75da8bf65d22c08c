// Command metal-cloud-controller-manager is the cloud-controller-manager for
// clusters on machines their owners run themselves. It runs the upstream
// cloud-node, cloud-node-lifecycle and route controllers, and a service
// controller (upstream's, or pkg/lbcontroller for a provider whose load
// balancers follow nodes by themselves, as "metal"'s do), against the provider
// chosen with --cloud-provider (default "metal"). Its subcommand migrate
// converts MetalLB's and kube-vip-cloud-provider's configuration into the
// cloud-config.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/cloud-provider/app"
	"k8s.io/cloud-provider/names"
	"k8s.io/component-base/cli"
	cliflag "k8s.io/component-base/cli/flag"
	_ "k8s.io/component-base/logs/json/register"          // the optional JSON log format
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // the version metric
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/version"
)

func main() {
	os.Exit(run())
}

func run() int {
	opts, err := newOptions()
	if err != nil {
		fmt.Fprintf(os.Stderr, "metal-cloud-controller-manager: %v\n", err)
		return 1
	}
	// SIGTERM and SIGINT end ctx: the upstream command returns, and stop
	// ends the controllers, hands the leader-election Lease over and ends
	// the every-replica work. A second signal kills the process at once.
	sigCtx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	ctx, stopFor := context.WithCancelCause(sigCtx)
	defer stopFor(nil)
	m := &manager{ctx: ctx, stopFor: stopFor}
	fss := cliflag.NamedFlagSets{}
	cmd := app.NewCloudControllerManagerCommand(opts, m.initializeCloud, m.controllerInitializers(),
		names.CCMControllerAliases(), fss, ctx.Done())
	cmd.Use = "metal-cloud-controller-manager"
	cmd.Long += "\n\n`metal-cloud-controller-manager migrate metallb|kube-vip --help` converts another\n" +
		"LoadBalancer implementation's configuration into the cloud-config."
	cmd.AddCommand(newMigrateCommand())
	printVersion(cmd)
	documentDefaults(cmd.Flags())
	code := cli.Run(cmd)
	if ctx.Err() != nil {
		cancel() // from here on, a second signal kills
		m.stop()
	}
	klog.Flush()
	return code
}

// printVersion makes --version print this release (pkg/version), not the
// Kubernetes libraries' version that the upstream command prints, and logs
// the release when the manager starts. --version=raw and --version=vX.Y.Z
// keep their upstream meaning.
func printVersion(cmd *cobra.Command) {
	upstream := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		switch f := c.Flags().Lookup("version"); {
		case f != nil && f.Value.String() == "true":
			fmt.Fprintf(c.OutOrStdout(), "%s %s\n", c.Name(), version.String())
			return nil
		case f == nil || f.Value.String() == "false":
			klog.InfoS("Starting", "version", version.Version(), "revision", version.Revision())
		}
		return upstream(c, args)
	}
}
