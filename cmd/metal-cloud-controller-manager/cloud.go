package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/app/config"
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/cachetrim"
	metalconfig "github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/extension"
	_ "github.com/metal-ccm/metal-ccm/pkg/metal" // registers the "metal" provider
)

// manager is the state one run of the command shares between the upstream
// command's callbacks and the stop that follows a signal.
type manager struct {
	ctx      context.Context        // ends on SIGTERM or SIGINT, or for a changed config (restartForConfig)
	stopFor  func(cause error)      // ends ctx with a cause other than a signal
	election *election              // nil without leader election
	replica  extension.EveryReplica // nil for providers without every-replica work
}

// initializeCloud builds the provider named by --cloud-provider from
// --cloud-config. The upstream command gives it no way to return an error, so
// a bad config ends the process here, with every problem on its own line and
// no stack dump. It also prepares the stop: upstream's command calls it before
// it starts the leader election, so the gate is in the elector's client.
func (m *manager) initializeCloud(c *config.CompletedConfig) cloudprovider.Interface {
	name := c.ComponentConfig.KubeCloudShared.CloudProvider.Name
	file := c.ComponentConfig.KubeCloudShared.CloudProvider.CloudConfigFile
	cloud, err := cloudprovider.InitCloudProvider(name, file)
	if err == nil && cloud == nil {
		err = fmt.Errorf("no cloud provider named %q is built into this binary", name)
	}
	if err != nil {
		fail(fmt.Sprintf("cloud provider %q, config %q", name, file), err)
	}
	if le := c.ComponentConfig.Generic.LeaderElection; le.LeaderElect {
		// The stop's own client is made before the gate goes in.
		cs, err := kubernetes.NewForConfig(rest.AddUserAgent(rest.CopyConfig(c.Kubeconfig), "metal-cloud-controller-manager-stop"))
		if err != nil {
			fail("leader election", err)
		}
		m.election = &election{namespace: le.ResourceNamespace, name: le.ResourceName,
			retryPeriod: le.RetryPeriod.Duration, client: cs, gate: newLeaseGate(le.ResourceNamespace, le.ResourceName)}
		c.Kubeconfig.Wrap(m.election.gate.wrap)
	}
	// One informer factory, so one decoded copy of each Node, Service and
	// EndpointSlice: the upstream controllers of the leader and the
	// provider's every-replica work (the announcer) share it. Nobody reads
	// managedFields (about 30% of a decoded Service or Node): the transform
	// drops them before they are cached. A write of an object without them
	// keeps the server's.
	c.SharedInformers = informers.NewSharedInformerFactoryWithOptions(c.VersionedClient, resyncPeriod(c.ComponentConfig.Generic.MinResyncPeriod.Duration),
		informers.WithTransform(cachetrim.Transform))
	ext := extension.Of(cloud)
	if r := ext.EveryReplica; r != nil {
		cs, err := c.ClientBuilder.Client("metal-cloud-provider-announcer")
		if err == nil {
			err = r.RunInEveryReplica(m.ctx, cs, c.SharedInformers)
		}
		if err != nil {
			fail(fmt.Sprintf("cloud provider %q", name), err)
		}
		m.replica = r
	}
	if ext.WatchConfig != nil && file != "" {
		go func() {
			if err := ext.WatchConfig(m.ctx, file); errors.Is(err, metalconfig.ErrRestart) {
				m.restartForConfig(err)
			}
		}()
	}
	return cloud
}

// resyncPeriod is upstream's resync of the shared informers: min to twice
// min, at random, so that replicas do not resync together.
func resyncPeriod(min time.Duration) time.Duration {
	return time.Duration(float64(min) * (rand.Float64() + 1)) //nolint:gosec // jitter, not a secret
}

func fail(what string, err error) {
	klog.Flush()
	fmt.Fprintf(os.Stderr, "metal-cloud-controller-manager: %s:\n%v\n", what, err)
	os.Exit(1)
}
