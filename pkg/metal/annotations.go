package metal

// Annotation is a Service annotation the metal provider reads. The reference
// in docs/reference/annotations.md is generated from these comments.
type Annotation string

const (
	// AnnotationLoadBalancerIPs asks for specific addresses instead of pool
	// ones, at most one per IP family, each inside a pool the Service may use.
	// Takes precedence over spec.loadBalancerIP.
	// Type: comma-separated IP addresses. Default: none.
	// Example: "198.18.100.10,2001:db8:100::10"
	AnnotationLoadBalancerIPs Annotation = "metal-ccm.io/load-balancer-ips"

	// AnnotationPool takes addresses from the named pool only, even if that
	// pool has autoAssign off. The pool must allow the Service.
	// Type: pool name. Default: the first autoAssign pools that allow the Service.
	// Example: "public"
	AnnotationPool Annotation = "metal-ccm.io/pool"

	// AnnotationSharingKey lets Services with the same key share one address,
	// when their ports (protocol and number) do not clash and their traffic
	// policies are equal (for Local, with equal selectors too).
	// Type: string. Default: none (the address is the Service's alone).
	// Example: "dns"
	AnnotationSharingKey Annotation = "metal-ccm.io/sharing-key"

	// AnnotationAllocationRetry is written by the provider, not by users: a
	// new value makes the service controller try a pending Service again at
	// once (an address was freed, or the Service lost a duplicate address).
	// Type: RFC 3339 time. Default: none.
	// Example: "2026-12-02T15:04:05Z"
	AnnotationAllocationRetry Annotation = "metal-ccm.io/allocation-retry"
)

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
)
