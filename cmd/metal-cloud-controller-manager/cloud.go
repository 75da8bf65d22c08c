package main

import (
	"fmt"
	"os"

	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/app/config"
	"k8s.io/klog/v2"

	_ "github.com/metal-ccm/metal-ccm/pkg/metal" // registers the "metal" provider
)

// initializeCloud builds the provider named by --cloud-provider from
// --cloud-config. The upstream command gives it no way to return an error, so
// a bad config ends the process here, with every problem on its own line and
// no stack dump.
func initializeCloud(c *config.CompletedConfig) cloudprovider.Interface {
	name := c.ComponentConfig.KubeCloudShared.CloudProvider.Name
	file := c.ComponentConfig.KubeCloudShared.CloudProvider.CloudConfigFile
	cloud, err := cloudprovider.InitCloudProvider(name, file)
	if err == nil && cloud == nil {
		err = fmt.Errorf("no cloud provider named %q is built into this binary", name)
	}
	if err != nil {
		klog.Flush()
		fmt.Fprintf(os.Stderr, "metal-cloud-controller-manager: cloud provider %q, config %q:\n%v\n", name, file, err)
		os.Exit(1)
	}
	return cloud
}
