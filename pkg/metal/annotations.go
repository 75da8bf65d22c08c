package metal

import "github.com/metal-ccm/metal-ccm/pkg/annotation"

// The Service annotations the metal provider reads. Each is declared once
// below, with its value type, default, example and meaning: the provider
// reads it only through that declaration (servicerequest.go), and
// hack/gendocs writes docs/reference/annotations.md from Annotations. The
// names are constants too, for those who write annotations (tests, tools).
const (
	AnnotationLoadBalancerIPs Annotation = "metal-ccm.io/load-balancer-ips"
	AnnotationPool            Annotation = "metal-ccm.io/pool"
	AnnotationSharingKey      Annotation = "metal-ccm.io/sharing-key"
	AnnotationBGPCommunities  Annotation = annotation.BGPCommunities
)

var (
	loadBalancerIPsAnnotation = declare(AnnotationLoadBalancerIPs, ipsPerFamily, AnnotationDoc{
		Default: "none",
		Example: "198.18.100.10,2001:db8:100::10",
		Meaning: "Asks for specific addresses instead of pool ones, each of a family in spec.ipFamilies and inside a pool the Service may use. " +
			"Takes precedence over spec.loadBalancerIP, which is read the same way.",
	})
	poolAnnotation = declare(AnnotationPool, text("pool name"), AnnotationDoc{
		Default: "the first autoAssign pools that allow the Service",
		Example: "public",
		Meaning: "Takes addresses from the named pool only, even if that pool has autoAssign off. The pool must allow the Service.",
	})
	// Read by bgp.ServiceCommunities, which the node agents share (they do
	// not link this package); declared here for the reference.
	bgpCommunitiesAnnotation = declare(AnnotationBGPCommunities, communityList, AnnotationDoc{
		Default: "none",
		Example: "65000:200,64512:9:9",
		Meaning: "Adds BGP communities (standard, well-known names, large) to the paths of the Service's addresses, on top of its pool's " +
			"bgpAdvertisements. Every one must be in the pool's serviceCommunities; otherwise none is added and a Warning Event " +
			"CommunityNotAllowed (or InvalidAnnotation) says why. The address is announced either way.",
	})
	sharingKeyAnnotation = declare(AnnotationSharingKey, text("string"), AnnotationDoc{
		Default: "none (the address is the Service's alone)",
		Example: "dns",
		Meaning: "Lets Services with the same key share one address, when their ports (protocol and number) do not clash " +
			"and their traffic policies are equal (for Local, with equal selectors too).",
	})
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
	// ReasonCommunityNotAllowed is a warning, not a refusal: the Service's
	// addresses are announced without its metal-ccm.io/bgp-communities.
	ReasonCommunityNotAllowed = "CommunityNotAllowed"
)
