// Command metal-cloud-controller-manager is the cloud-controller-manager for
// clusters on machines their owners run themselves. It runs the upstream
// cloud-node, cloud-node-lifecycle and route controllers, and a service
// controller (upstream's, or pkg/lbcontroller for a provider whose load
// balancers follow nodes by themselves, as "metal"'s do), against the provider
// chosen with --cloud-provider (default "metal").
package main

import (
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cloud-provider/app"
	"k8s.io/cloud-provider/names"
	"k8s.io/component-base/cli"
	cliflag "k8s.io/component-base/cli/flag"
	_ "k8s.io/component-base/logs/json/register"          // the optional JSON log format
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // the version metric
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
	fss := cliflag.NamedFlagSets{}
	cmd := app.NewCloudControllerManagerCommand(opts, initializeCloud, controllerInitializers(),
		names.CCMControllerAliases(), fss, wait.NeverStop)
	cmd.Use = "metal-cloud-controller-manager"
	documentDefaults(cmd.Flags())
	return cli.Run(cmd)
}
