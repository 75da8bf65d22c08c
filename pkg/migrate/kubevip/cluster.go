package kubevip

import "github.com/metal-ccm/metal-ccm/pkg/migrate"

// Where kube-vip-cloud-provider reads its ConfigMap by default.
const (
	DefaultNamespace = "kube-system"
	DefaultName      = "kubevip"
)

// ConfigMaps is the resource the converter gets the ConfigMap from.
var ConfigMaps = migrate.Resource{Group: "", Versions: []string{"v1"}, Resource: "configmaps"}
