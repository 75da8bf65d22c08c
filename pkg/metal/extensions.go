package metal

import "github.com/metal-ccm/metal-ccm/pkg/extension"

var _ extension.Provider = (*Cloud)(nil)

// Extensions are what the manager runs for this provider beyond
// cloudprovider.Interface: the announcements in every replica (the
// replica runtime, pkg/replica), the config reload (WatchConfig) and the service
// controller without node sync, with this provider's Service rule, output
// annotations, retries and pauses.
func (c *Cloud) Extensions() extension.Extensions {
	return extension.Extensions{
		EveryReplica: c.replica,
		WatchConfig:  c.WatchConfig,
		Services: &extension.Services{
			Rule:              c.ServiceRule(),
			OutputAnnotations: c.OutputAnnotations(),
			SetRequeue:        c.SetRequeue,
			SetBusy:           c.SetBusy,
		},
	}
}
