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
