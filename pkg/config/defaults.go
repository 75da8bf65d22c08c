package config

// Default values of optional fields.
const (
	DefaultInstanceType     = "metal"
	DefaultDiscoveryPolicy  = DiscoveryAccept
	DefaultPowerStateSource = "none"
)

// Default fills every optional field left empty with its default.
func (c *CloudConfig) Default() {
	n := &c.Nodes
	if n.DefaultInstanceType == "" {
		n.DefaultInstanceType = DefaultInstanceType
	}
	if n.Discovery.Policy == "" {
		n.Discovery.Policy = DefaultDiscoveryPolicy
	}
	if n.PowerState.Source == "" {
		n.PowerState.Source = DefaultPowerStateSource
	}
	for i := range n.Inventory {
		m := &n.Inventory[i]
		if m.ID == "" {
			m.ID = m.Name
		}
		if m.InstanceType == "" {
			m.InstanceType = n.DefaultInstanceType
		}
	}
}
