// Package config holds the metal provider's cloud-config: its typed form, strict
// decoding, defaults and validation.
package config

import (
	v1 "k8s.io/api/core/v1"
)

// APIVersion is the only apiVersion this build reads.
const APIVersion = "metal-ccm.io/v1alpha1"

// Kind is the kind of a cloud-config document.
const Kind = "CloudConfig"

// CloudConfig is the metal provider's configuration, read from the file named
// by --cloud-config.
type CloudConfig struct {
	// APIVersion must be "metal-ccm.io/v1alpha1".
	APIVersion string `json:"apiVersion"`
	// Kind must be "CloudConfig".
	Kind string `json:"kind"`
	// Nodes configures how nodes are matched to machines and initialized.
	Nodes Nodes `json:"nodes"`
}

// Nodes configures the node side of the provider (InstancesV2).
type Nodes struct {
	// DefaultInstanceType is the instance type given to machines that do not
	// name one. Default: "metal".
	DefaultInstanceType string `json:"defaultInstanceType,omitempty"`
	// Inventory lists the machines this cluster knows by name.
	Inventory []Machine `json:"inventory,omitempty"`
	// Discovery decides what happens to nodes that are not in the inventory.
	Discovery Discovery `json:"discovery"`
	// Topology maps node-IP subnets to a region and zone. Subnets must not overlap.
	Topology []TopologyRule `json:"topology,omitempty"`
	// PowerState names the source asked whether a machine is shut down.
	// Default: "none" (a machine is never reported as shut down).
	PowerState PowerState `json:"powerState"`
}

// Machine is one entry of the inventory.
type Machine struct {
	// Name is the Kubernetes node name of the machine. Required, unique.
	Name string `json:"name"`
	// ID is a stable identifier of the machine, used in its providerID.
	// Default: the name. Unique. Changing it makes the machine a new one.
	ID string `json:"id,omitempty"`
	// Addresses are the machine's addresses. When empty, the kubelet's
	// provided node IP is used, as for a discovered node.
	Addresses []Address `json:"addresses,omitempty"`
	// InstanceType becomes node.kubernetes.io/instance-type.
	// Default: nodes.defaultInstanceType.
	InstanceType string `json:"instanceType,omitempty"`
	// Region becomes topology.kubernetes.io/region. Default: from the topology rules.
	Region string `json:"region,omitempty"`
	// Zone becomes topology.kubernetes.io/zone. Default: from the topology rules.
	Zone string `json:"zone,omitempty"`
	// Labels are extra labels set on the node.
	Labels map[string]string `json:"labels,omitempty"`
}

// Address is one address of a machine.
type Address struct {
	// Type is one of InternalIP, ExternalIP, Hostname, InternalDNS, ExternalDNS.
	Type v1.NodeAddressType `json:"type"`
	// Address is an IP address for the IP types, a DNS name for the others.
	Address string `json:"address"`
}

// DiscoveryPolicy says what to do with a node that is not in the inventory.
type DiscoveryPolicy string

const (
	// DiscoveryAccept initializes such nodes from their kubelet-provided node IP.
	DiscoveryAccept DiscoveryPolicy = "Accept"
	// DiscoveryReject leaves such nodes tainted and records a Warning Event on them.
	DiscoveryReject DiscoveryPolicy = "Reject"
)

// Discovery configures nodes that are not in the inventory.
type Discovery struct {
	// Policy is Accept or Reject. Default: Accept.
	Policy DiscoveryPolicy `json:"policy,omitempty"`
}

// TopologyRule maps the nodes whose address is in Subnet to a region and zone.
type TopologyRule struct {
	// Subnet is a CIDR, IPv4 or IPv6. Required.
	Subnet string `json:"subnet"`
	// Region becomes topology.kubernetes.io/region.
	Region string `json:"region,omitempty"`
	// Zone becomes topology.kubernetes.io/zone.
	Zone string `json:"zone,omitempty"`
}

// PowerState names the source of machines' power state.
type PowerState struct {
	// Source is the name of a registered power-state source. Default: "none".
	Source string `json:"source,omitempty"`
}
