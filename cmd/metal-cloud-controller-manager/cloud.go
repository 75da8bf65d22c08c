package main

import (
	"context"
	"fmt"
	"os"

	"k8s.io/client-go/kubernetes"
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
		fail(fmt.Sprintf("cloud provider %q, config %q", name, file), err)
	}
	if r, ok := cloud.(everyReplica); ok {
		cs, err := c.ClientBuilder.Client("metal-cloud-provider-announcer")
		if err == nil {
			err = r.RunInEveryReplica(context.Background(), cs)
		}
		if err != nil {
			fail(fmt.Sprintf("cloud provider %q", name), err)
		}
	}
	if w, ok := cloud.(configWatcher); ok && file != "" {
		go w.WatchConfig(context.Background(), file)
	}
	return cloud
}

// configWatcher is implemented by providers that apply a changed config file
// without a restart.
type configWatcher interface {
	WatchConfig(ctx context.Context, path string)
}

// everyReplica is implemented by providers with work that must run in every
// replica whatever the leader election says (the metal provider's BGP
// announcements). It is started before leader election.
type everyReplica interface {
	RunInEveryReplica(ctx context.Context, cs kubernetes.Interface) error
}

func fail(what string, err error) {
	klog.Flush()
	fmt.Fprintf(os.Stderr, "metal-cloud-controller-manager: %s:\n%v\n", what, err)
	os.Exit(1)
}
