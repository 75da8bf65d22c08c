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

	"k8s.io/cloud-provider/app"
	"k8s.io/cloud-provider/names"
	"k8s.io/component-base/cli"
	cliflag "k8s.io/component-base/cli/flag"
	_ "k8s.io/component-base/logs/json/register"          // the optional JSON log format
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // the version metric
	"k8s.io/klog/v2"
)

func main() {
	os.Exit(run())
}

func run() int {
	setGCPercent()
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
	documentDefaults(cmd.Flags())
	code := cli.Run(cmd)
	if ctx.Err() != nil {
		cancel() // from here on, a second signal kills
		m.stop()
	}
	klog.Flush()
	return code
}
