package main

import (
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/cloud-provider/options"

	"github.com/metal-ccm/metal-ccm/pkg/metal"
)

// Defaults that differ from upstream's. Each is explained in the flag's help,
// so that --help and the generated flag reference say why.
const (
	defaultConcurrentNodeSyncs    = 10
	defaultConcurrentServiceSyncs = 10
	defaultClientQPS              = 100
	defaultClientBurst            = 200
)

// defaultNotes are appended to the upstream help of the flags whose defaults
// this binary changes.
var defaultNotes = map[string]string{
	"cloud-provider": fmt.Sprintf("metal-ccm defaults it to %q, the built-in provider.", metal.ProviderName),
	"concurrent-node-syncs": fmt.Sprintf("metal-ccm raises the default from 1 to %d: a rack powered on registers "+
		"dozens of nodes at once, and with one worker each waits for all before it.", defaultConcurrentNodeSyncs),
	"concurrent-service-syncs": fmt.Sprintf("metal-ccm raises the default from 1 to %d: node changes touch every "+
		"LoadBalancer Service, and one worker makes the last Service wait for all others. Allocation is safe with "+
		"parallel workers.", defaultConcurrentServiceSyncs),
	"kube-api-qps": fmt.Sprintf("metal-ccm raises the default from 20 to %d: initializing a node takes a write, and a second when its addresses change, "+
		"so a low limit, not the API server, would pace node joins.", defaultClientQPS),
	"kube-api-burst": fmt.Sprintf("metal-ccm raises the default from 30 to %d, with --kube-api-qps.", defaultClientBurst),
}

func newOptions() (*options.CloudControllerManagerOptions, error) {
	opts, err := options.NewCloudControllerManagerOptions()
	if err != nil {
		return nil, fmt.Errorf("initialize command options: %w", err)
	}
	opts.KubeCloudShared.CloudProvider.Name = metal.ProviderName
	opts.NodeController.ConcurrentNodeSyncs = defaultConcurrentNodeSyncs
	opts.ServiceController.ConcurrentServiceSyncs = defaultConcurrentServiceSyncs
	opts.Generic.ClientConnection.QPS = defaultClientQPS
	opts.Generic.ClientConnection.Burst = defaultClientBurst
	return opts, nil
}

func documentDefaults(fs *pflag.FlagSet) {
	for name, note := range defaultNotes {
		if f := fs.Lookup(name); f != nil {
			f.Usage += " " + note
		}
	}
}
