package metallb

import "github.com/metal-ccm/metal-ccm/pkg/migrate"

// DefaultNamespace is where MetalLB reads its resources.
const DefaultNamespace = "metallb-system"

// Resources are MetalLB's resources the converter reads from a cluster;
// BGPPeer in v1beta2 when it is served, else v1beta1.
var Resources = []migrate.Resource{
	{Group: Group, Versions: []string{"v1beta1"}, Resource: "ipaddresspools"},
	{Group: Group, Versions: []string{"v1beta2", "v1beta1"}, Resource: "bgppeers"},
	{Group: Group, Versions: []string{"v1beta1"}, Resource: "bgpadvertisements"},
	{Group: Group, Versions: []string{"v1beta1"}, Resource: "l2advertisements"},
	{Group: Group, Versions: []string{"v1beta1"}, Resource: "communities"},
	{Group: Group, Versions: []string{"v1beta1"}, Resource: "bfdprofiles"},
}
