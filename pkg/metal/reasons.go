package metal

// Event reasons on Services. They are stable: alerts may match them.
const (
	ReasonInvalidAnnotation = "InvalidAnnotation"
	ReasonIPNotInPool       = "IPNotInPool"
	ReasonIPInUse           = "IPInUse"
	ReasonSharingClash      = "SharingClash"
	ReasonUnknownPool       = "UnknownPool"
	ReasonPoolNotAllowed    = "PoolNotAllowed"
	ReasonNoPoolForFamily   = "NoPoolForFamily"
	ReasonPoolExhausted     = "PoolExhausted"
	ReasonIPConflict        = "IPConflict"
	// ReasonAddressOutsidePools is a warning, not a refusal: the Service
	// keeps an address that is in no pool (adopted, or of a removed pool).
	ReasonAddressOutsidePools = "AddressOutsidePools"
	ReasonAllocationFailed    = "AllocationFailed"
	// ReasonCommunityNotAllowed is a warning, not a refusal: the Service's
	// addresses are announced without its metal-ccm.io/bgp-communities.
	ReasonCommunityNotAllowed = "CommunityNotAllowed"
)

// Event reasons on nodes. They are stable: alerts may match them.
const (
	// ReasonDiscoveryRejected: the node is not in the inventory and
	// nodes.discovery.policy is Reject, so it stays uninitialized.
	ReasonDiscoveryRejected = "DiscoveryRejected"
	// ReasonNodeIPUnknown: the node has no address to go by (no
	// provided-node-ip annotation and no IP in its status).
	ReasonNodeIPUnknown = "NodeIPUnknown"
)

// Event reasons of the power-state evidence, recorded on nodes when the
// conclusion about a node changes. They are stable: alerts may match them.
const (
	// ReasonPoweredOff: the source says the machine is off; the node is
	// reported shut down.
	ReasonPoweredOff = "PoweredOff"
	// ReasonPoweredOn: the source says the machine is on again (after
	// PoweredOff or PowerStateUnknown).
	ReasonPoweredOn = "PoweredOn"
	// ReasonPowerStateUnknown: the source cannot tell (no answer, refused
	// credentials, unusable settings); the node is not reported shut down.
	ReasonPowerStateUnknown = "PowerStateUnknown"
	// ReasonMachineGone: the source says the machine is gone (its
	// BareMetalHost was deleted); upstream deletes the node.
	ReasonMachineGone = "MachineGone"
)
