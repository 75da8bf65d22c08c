// Package migrate turns the configuration of another LoadBalancer
// implementation (MetalLB's custom resources, kube-vip-cloud-provider's
// ConfigMap) into this project's cloud-config, and lists everything of it
// that has no equivalent, so that an operator switching over keeps every
// address and knows what to do by hand.
//
// The input types are the converters' own, with only the fields they read:
// the other projects' Go modules are not dependencies.
package migrate

// Where the chart mounts the files the converted configs name: the L2
// membership's key and the BGP passwords (one file per key of its Secret).
const (
	DefaultL2SecretFile = "/etc/metal-ccm/l2/key" //nolint:gosec // a path, not a credential
	DefaultPasswordDir  = "/etc/metal-ccm/bgp"    //nolint:gosec // a path, not a credential
)
