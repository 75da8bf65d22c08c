package annotation

// The Service annotations users write. Each is declared once below, with
// its value type, default, example and meaning: the provider and the
// protocols read it only through that declaration, and hack/gendocs writes
// docs/reference/annotations.md from All. The names are constants too, for
// those who write annotations (tests, tools).
const (
	NameLoadBalancerIPs Key = "metal-ccm.io/load-balancer-ips"
	NamePool            Key = "metal-ccm.io/pool"
	NameSharingKey      Key = "metal-ccm.io/sharing-key"
	NameBGPCommunities  Key = "metal-ccm.io/bgp-communities"
)

var (
	LoadBalancerIPs = declare(NameLoadBalancerIPs, ipsPerFamily, Doc{
		Default: "none",
		Example: "198.18.100.10,2001:db8:100::10",
		Meaning: "Asks for specific addresses instead of pool ones, each of a family in spec.ipFamilies and inside a pool the Service may use. " +
			"Takes precedence over spec.loadBalancerIP, which is read the same way.",
		Aliases: []Key{"metallb.io/loadBalancerIPs", "metallb.universe.tf/loadBalancerIPs"},
	})
	Pool = declare(NamePool, text("pool name"), Doc{
		Default: "the first autoAssign pools that allow the Service",
		Example: "public",
		Meaning: "Takes addresses from the named pool only, even if that pool has autoAssign off. The pool must allow the Service.",
		Aliases: []Key{"metallb.io/address-pool", "metallb.universe.tf/address-pool"},
	})
	// Read by the BGP protocol's ServiceCommunities, in the replicas and
	// the node agents alike.
	BGPCommunities = declare(NameBGPCommunities, communityList, Doc{
		Default: "none",
		Example: "65000:200,64512:9:9",
		Meaning: "Adds BGP communities (standard, well-known names, large) to the paths of the Service's addresses, on top of its pool's " +
			"bgpAdvertisements. Every one must be in the pool's serviceCommunities; otherwise none is added and a Warning Event " +
			"CommunityNotAllowed (or InvalidAnnotation) says why. The address is announced either way.",
	})
	SharingKey = declare(NameSharingKey, text("string"), Doc{
		Default: "none (the address is the Service's alone)",
		Example: "dns",
		Meaning: "Lets Services with the same key share one address, when their ports (protocol and number) do not clash " +
			"and their traffic policies are equal (for Local, with equal selectors too).",
		Aliases: []Key{"metallb.io/allow-shared-ip", "metallb.universe.tf/allow-shared-ip"},
	})
)
