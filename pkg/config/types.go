// Package config holds the metal provider's cloud-config: its typed form, strict
// decoding, defaults and validation.
package config

import (
	"encoding/json"
	"net/netip"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/community"
	"github.com/metal-ccm/metal-ccm/pkg/ipam"
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
	// LoadBalancer configures the IP pools of LoadBalancer Services.
	LoadBalancer LoadBalancer `json:"loadBalancer"`
	// BGP configures the embedded BGP speaker that announces LoadBalancer IPs.
	BGP BGP `json:"bgp"`
	// Routes configures pod network routes (the Routes interface).
	Routes Routes `json:"routes"`
	// HealthChecks configures the checks of the nodes each LoadBalancer
	// address is announced with.
	HealthChecks HealthChecks `json:"healthChecks"`
	// L2 configures the answering of ARP and Neighbor Solicitations for the
	// addresses of pools announced with L2 (by the node agents).
	L2 L2 `json:"l2"`
	// ServiceStatus bounds how often the leader writes each LoadBalancer
	// Service's conditions and announcement summary.
	ServiceStatus ServiceStatus `json:"serviceStatus"`
}

// ServiceStatus bounds the writes of the leader that keep each
// LoadBalancer Service's conditions (metal-ccm.io/AddressAllocated,
// metal-ccm.io/Announced) and its metal-ccm.io/announcement summary
// current: the changes of one Service within minInterval are written
// together, and all Services together get at most writesPerSecond writes.
// A reload applies.
type ServiceStatus struct {
	// MinInterval is the least time between two writes to one Service,
	// from 1s to 10m. Default: 10s.
	MinInterval *metav1.Duration `json:"minInterval,omitempty"`
	// WritesPerSecond bounds the writes to all Services together, from 1
	// to 100. Default: 20.
	WritesPerSecond int `json:"writesPerSecond,omitempty"`
}

// HealthChecks configures how every replica checks the nodes it announces
// as next hops, as a cloud load balancer does: kube-proxy's /healthz for
// Services with externalTrafficPolicy Cluster, the Service's
// healthCheckNodePort for Local ones. A node failing its check is left out
// of the addresses it carries until it passes again; when every node of an
// address fails, all stay announced (fail open). The L2 node agents check
// their own node's kube-proxy with the same settings: a node that fails
// answers for no L2 address while another candidate can (docs/l2.md).
type HealthChecks struct {
	// Enabled turns the checks on. Default: true.
	Enabled *bool `json:"enabled,omitempty"`
	// Port is kube-proxy's health port on the nodes (its
	// healthzBindAddress). Default: 10256.
	Port uint16 `json:"port,omitempty"`
	// Interval is the time between the starts of two checks of a node,
	// from 100ms to 1m; a failed check is repeated at once. Default: 1s.
	Interval *metav1.Duration `json:"interval,omitempty"`
	// Timeout bounds one check (connect, request, answer), from 100ms to
	// 1m. Default: 400ms.
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// HTTPInterval is the time between two HTTP checks of a node that
	// passes them, from interval to 1m. At the checks between, every
	// interval, the node's address is pinged (ICMP echo, from an
	// unprivileged ping socket: the replica's group must be in the host's
	// net.ipv4.ping_group_range); a ping without a reply within timeout is
	// followed at once by an HTTP check, so a node that stops answering is
	// still withdrawn within interval + 2 × timeout. A node that drops
	// pings but passes its HTTP checks is checked by HTTP alone. Equal to
	// interval, or where ping sockets are not allowed: every check is an
	// HTTP check. Default: 10s (or interval, if longer).
	HTTPInterval *metav1.Duration `json:"httpInterval,omitempty"`
	// FailuresToWithdraw is the failed checks in a row that withdraw a
	// node, from 1 to 10. Default: 2.
	FailuresToWithdraw int `json:"failuresToWithdraw,omitempty"`
	// SuccessesToReturn is the passed checks in a row that return it, from
	// 1 to 10. Default: 2.
	SuccessesToReturn int `json:"successesToReturn,omitempty"`
}

// Routes configures the announcement of each node's pod CIDRs over BGP, so
// that the network routes pod traffic without an overlay.
type Routes struct {
	// Enabled offers the Routes interface to the route controller (which also
	// needs --cluster-cidr and --configure-cloud-routes). Default: false.
	Enabled bool `json:"enabled,omitempty"`
	// NextHopAddressType is the node address used as next hop, of the pod
	// CIDR's family: InternalIP or ExternalIP. Default: InternalIP.
	NextHopAddressType v1.NodeAddressType `json:"nextHopAddressType,omitempty"`
	// ClusterCIDRs cover every pod CIDR; peers with podRoutes false are sent
	// nothing inside them. Required when a peer has podRoutes false.
	ClusterCIDRs []string       `json:"clusterCIDRs,omitempty"`
	clusterCIDRs []netip.Prefix // ClusterCIDRs, parsed by validation
}

// LoadBalancer configures LoadBalancer Services.
type LoadBalancer struct {
	// Pools are the address pools LoadBalancer IPs come from. They must not overlap.
	Pools []Pool `json:"pools,omitempty"`
	// Class is the spec.loadBalancerClass of the Services served, a
	// qualified name as Kubernetes takes there ("metal-ccm.io/bgp"), so
	// that another load-balancer implementation can serve the other
	// classes beside this one. Services of any other class are left
	// alone. Default: none (the Services without a class are
	// served, as upstream's service controller does).
	Class string `json:"class,omitempty"`
	// ServeDefaultClass, with a class, also serves the Services without a
	// class. Needs class. Default: false.
	ServeDefaultClass bool `json:"serveDefaultClass,omitempty"`
}

// Pool is a named set of addresses for LoadBalancer Services.
type Pool struct {
	// Name identifies the pool, for the metal-ccm.io/pool annotation. Required, unique.
	Name string `json:"name"`
	// Addresses are CIDRs ("198.18.100.0/24") or inclusive ranges
	// ("198.18.101.10-198.18.101.20"), IPv4 or IPv6. Required.
	Addresses []string `json:"addresses"`
	// AutoAssign lets Services that name no pool get addresses from this one.
	// Default: true.
	AutoAssign *bool `json:"autoAssign,omitempty"`
	// Namespaces limits the pool to Services in these namespaces. Default: all.
	Namespaces []string `json:"namespaces,omitempty"`
	// ServiceSelector limits the pool to Services whose labels match. Default: all.
	ServiceSelector *metav1.LabelSelector `json:"serviceSelector,omitempty"`
	// Announce lists how the pool's addresses are made reachable: BGP (the
	// speakers announce them to bgp.peers) and L2 (one node answers ARP or
	// Neighbor Solicitations for each on the nodes' segment; needs the node
	// agent). Both may be listed. Default: [BGP].
	Announce []Protocol `json:"announce,omitempty"`
	// BGPAdvertisements say which peers get the pool's addresses over BGP,
	// with which attributes (communities, local preference) and whether
	// as host routes, a covering aggregate or both; each peer gets the pool
	// from at most one of them. Default: one advertisement to every peer,
	// host routes without attributes.
	BGPAdvertisements []BGPAdvertisement `json:"bgpAdvertisements,omitempty"`
	// ServiceCommunities are the communities (standard, well-known names or
	// large) that a Service of the pool may add to its addresses with the
	// metal-ccm.io/bgp-communities annotation; any other is refused with a
	// Warning Event. Default: none.
	ServiceCommunities []string `json:"serviceCommunities,omitempty"`
	// WeightedECMP weighs the BGP paths of the pool's addresses of
	// Services with externalTrafficPolicy Local by their pods: each node's
	// path carries a link bandwidth extended community in proportion to
	// the Service's ready endpoints on it, so that a router that honours
	// it (FRR) sends each node its share of the traffic instead of an equal
	// one. Routers that ignore it spread the traffic evenly, as without.
	// Needs BGP in announce. Default: false.
	WeightedECMP bool `json:"weightedECMP,omitempty"`

	ranges             []ipam.Range    // Addresses, parsed by validation
	selector           labels.Selector // ServiceSelector, compiled by validation; nil: all
	serviceCommunities community.Set   // ServiceCommunities, parsed by validation
}

// BGPAdvertisement is one way a pool's addresses go out over BGP: to some
// peers, with some attributes.
type BGPAdvertisement struct {
	// Peers names the peers (bgp.peers[].name) that get the pool this way.
	// At most one of peers and peerSelector; with neither, every peer.
	// Default: none.
	Peers []string `json:"peers,omitempty"`
	// PeerSelector picks the peers by their labels (bgp.peers[].labels).
	// Default: none.
	PeerSelector *metav1.LabelSelector `json:"peerSelector,omitempty"`
	// Communities are standard communities ("65000:100") or well-known
	// names ("no-export", "blackhole", ...) the paths carry. Default: none.
	Communities []string `json:"communities,omitempty"`
	// LargeCommunities are large communities ("64512:1:2") the paths carry.
	// Default: none.
	LargeCommunities []string `json:"largeCommunities,omitempty"`
	// LocalPreference is the LOCAL_PREF of the paths, for iBGP peers only
	// (peers whose asn is bgp.asn): refused with an eBGP peer. Default:
	// none (the router's default, usually 100).
	LocalPreference *uint32 `json:"localPreference,omitempty"`
	// Aggregate also (or, with only, instead) announces the prefix of the
	// given length that covers each address, with the union of the next
	// hops of the addresses it covers. Default: none.
	Aggregate *Aggregate `json:"aggregate,omitempty"`

	peers       []string      // the names of the peers it selects, in bgp.peers order: set by validation
	communities community.Set // Communities and LargeCommunities, parsed by validation
}

// Aggregate is the covering prefix an advertisement announces.
type Aggregate struct {
	// IPv4Length is the length of the IPv4 aggregate, from 1 to 31.
	// Default: no IPv4 aggregate.
	IPv4Length *int `json:"ipv4Length,omitempty"`
	// IPv6Length is the length of the IPv6 aggregate, from 1 to 127.
	// Default: no IPv6 aggregate.
	IPv6Length *int `json:"ipv6Length,omitempty"`
	// Only announces the aggregate instead of the addresses themselves
	// (of the families that have a length). Default: false (both).
	Only bool `json:"only,omitempty"`
}

// Protocol is a way of making a pool's addresses reachable.
type Protocol string

const (
	// ProtocolBGP: announced over BGP to bgp.peers.
	ProtocolBGP Protocol = "BGP"
	// ProtocolL2: one node answers ARP (IPv4) or Neighbor Solicitations
	// (IPv6) for each address on the nodes' segment.
	ProtocolL2 Protocol = "L2"
)

// L2 configures the L2 announcement of pools with announce L2: the node
// agents agree, over a gossip membership of their own, on one node per
// address, which answers ARP and Neighbor Solicitations for it.
type L2 struct {
	// Interfaces are the network interfaces the agents answer on. Default:
	// for each address, the interfaces holding an address of a subnet that
	// contains it (the segment the address belongs to).
	Interfaces []string `json:"interfaces,omitempty"`
	// NodeSelector picks the nodes that run a node agent taking part in
	// L2 (match the agents' DaemonSet nodeSelector): only these answer, and
	// an agent answers only while it sees a strict majority of those of
	// them that are Ready alive. Default: every node.
	NodeSelector *metav1.LabelSelector `json:"nodeSelector,omitempty"`
	nodeSelector labels.Selector       // NodeSelector, compiled by validation; nil: every node
	// MemberlistPort is the TCP and UDP port of the agents' membership, on
	// each node's InternalIP. Default: 7946.
	MemberlistPort uint16 `json:"memberlistPort,omitempty"`
	// SecretFile holds the key that encrypts and authenticates the
	// membership's traffic (16, 24 or 32 bytes, raw or base64; for
	// example a mounted Secret: the chart creates one). Required when a
	// pool is announced with L2, unless insecureMembership is true.
	SecretFile string `json:"secretFile,omitempty"`
	// InsecureMembership lets the membership run without a key: any process
	// that reaches the memberlist port of a node can then read it and take
	// part, and only the binding of members to Nodes stands in its way
	// (docs/l2.md). Default: false.
	InsecureMembership bool `json:"insecureMembership,omitempty"`
	// Failback is what happens to an address when a node that would be
	// its first choice comes (back): Rebalance gives it to that node, so
	// that the addresses spread evenly again, and the connections open
	// through the node that answered meanwhile are reset; Sticky leaves it
	// with the node that answers until that node fails, so that no
	// connection is cut, and the addresses spread only as nodes fail
	// (docs/l2.md, "Failback"). Default: Rebalance.
	Failback Failback `json:"failback,omitempty"`
}

// Failback is what happens to an L2 address when a node that would be its
// first choice comes (back).
type Failback string

const (
	// FailbackRebalance: the address moves to the node rendezvous hashing
	// picks among those that can answer.
	FailbackRebalance Failback = "Rebalance"
	// FailbackSticky: the address stays with the node that answers it
	// while that node can.
	FailbackSticky Failback = "Sticky"
)

// BGP configures the embedded speaker. Without peers nothing is announced.
type BGP struct {
	// ASN is the speaker's own AS number. Required when there are peers.
	ASN uint32 `json:"asn,omitempty"`
	// RouterID is a non-zero IPv4 address. Default: the source address
	// toward the first IPv4 peer; with IPv6 peers only, the one toward the
	// first of them, folded into 32 bits (docs/routes.md, "Router ID").
	RouterID string     `json:"routerID,omitempty"`
	routerID netip.Addr // RouterID, parsed by validation
	// Peers are the routers to announce to.
	Peers []BGPPeer `json:"peers,omitempty"`
	// MaxPathsPerAddress is the most next hops (nodes) one LoadBalancer
	// address is announced with, from 1 to 255; with more eligible nodes a
	// stable subset is chosen per address by rendezvous hashing, so that the
	// addresses spread over all nodes. Routers install at most their own ECMP
	// limit of paths anyway (BIRD merges 16 by default). Default: 16.
	MaxPathsPerAddress int `json:"maxPathsPerAddress,omitempty"`
	// OnStop is what a replica's speaker does with its sessions when the
	// replica stops cleanly (SIGTERM): Withdraw closes them with a Cease, so
	// the routers drop this replica's paths at once (right when another
	// replica announces the same addresses); GracefulRestart leaves them to
	// close with the process, without a NOTIFICATION, so routers with graceful
	// restart keep forwarding on the paths until the replica is back or the
	// restart time passes (right for a single replica); Auto withdraws when
	// the leader-election Lease shows another live replica, and keeps the
	// paths otherwise. Default: Auto.
	OnStop StopMode `json:"onStop,omitempty"`
	// AnnounceFrom says who announces: Replicas (every CCM replica
	// announces every address with the nodes as ADD-PATH next hops: one
	// flat segment, a router with ADD-PATH) or Nodes (the node agent on
	// every node announces the addresses its node carries, itself as next
	// hop, to the peers whose nodeSelector matches its node: racks behind
	// their own routers, routers without ADD-PATH, eBGP multihop). With
	// Nodes the replicas announce nothing. Default: Replicas.
	AnnounceFrom AnnounceFrom `json:"announceFrom,omitempty"`
	// NodeASNLabel, with announceFrom Nodes, is a node label whose value
	// is the node's own AS number (an AS per rack); a node without the
	// label uses asn. Default: none (every node uses asn).
	NodeASNLabel string `json:"nodeASNLabel,omitempty"`
}

// AnnounceFrom is who announces the addresses.
type AnnounceFrom string

const (
	// AnnounceFromReplicas: the CCM replicas, with the nodes as next hops.
	AnnounceFromReplicas AnnounceFrom = "Replicas"
	// AnnounceFromNodes: the node agents, each for its own node.
	AnnounceFromNodes AnnounceFrom = "Nodes"
)

// StopMode is what the speaker does with its sessions on a clean stop.
type StopMode string

const (
	// StopAuto withdraws when another replica is known to run, else keeps.
	StopAuto StopMode = "Auto"
	// StopWithdraw always closes the sessions with a Cease NOTIFICATION.
	StopWithdraw StopMode = "Withdraw"
	// StopGracefulRestart always leaves the sessions to close with the
	// process, so that routers keep the paths for the restart time.
	StopGracefulRestart StopMode = "GracefulRestart"
)

// DefaultGatewayFamily is the family of a peer's default route
// (bgp.peers[].defaultGateway).
type DefaultGatewayFamily string

// The families of bgp.peers[].defaultGateway.
const (
	DefaultGatewayIPv4 DefaultGatewayFamily = "IPv4"
	DefaultGatewayIPv6 DefaultGatewayFamily = "IPv6"
)

// BGPPeer is one router.
type BGPPeer struct {
	// Name names the peer in loadBalancer.pools[].bgpAdvertisements[].peers:
	// a DNS label, unique. Default: the address as written, or the
	// interface.
	Name string `json:"name,omitempty"`
	name string // Name, or the address: set by validation
	// Labels are the peer's own labels, for the advertisements'
	// peerSelector (for example role: edge). Default: none.
	Labels map[string]string `json:"labels,omitempty"`
	// Address is the router's IP address. Required, unless interface or
	// defaultGateway is given (not both).
	Address string     `json:"address,omitempty"`
	address netip.Addr // Address, parsed by validation
	// Interface names the link to the router (for example eth1) for a
	// session between IPv6 link-local addresses (BGP unnumbered): the
	// session carries IPv4 and IPv6 routes, the IPv4 ones with IPv6 next
	// hops (extended next hop, RFC 8950, which the router must accept), and
	// a node agent gives its own link-local address as next hop. The
	// speaker announces itself on the link with Router Advertisements of
	// router lifetime 0, for routers that learn their unnumbered neighbours
	// from them (FRR); that takes CAP_NET_RAW, which the chart grants. The router
	// is linkLocalAddress, else the router the kernel learned on the link
	// from its Router Advertisements (the gateway of its "proto ra" routes,
	// else the one neighbour entry flagged as a router), looked for until
	// found, and again while the session is not established: a router at
	// another address there (a replaced one) takes the session
	// (docs/leaf-spine.md, "Unnumbered"). BFD runs single hop between the
	// link-local addresses, once the router is found. Not with address,
	// localAddress or ebgpMultihop. Default: none.
	Interface string `json:"interface,omitempty"`
	// LinkLocalAddress, with interface, is the router's IPv6 link-local
	// address on that link (fe80::/10, without a zone). Default: found on
	// the link as interface says.
	LinkLocalAddress string     `json:"linkLocalAddress,omitempty"`
	linkLocalAddress netip.Addr // LinkLocalAddress, parsed by validation
	// DefaultGateway, IPv4 or IPv6, makes the router the gateway of the
	// default route of that family where the speaker runs (a node agent:
	// its node's, the routers of a rack differing per node), read when the
	// speaker starts; a default route over several gateways is refused.
	// Not with address or interface. Default: none.
	DefaultGateway DefaultGatewayFamily `json:"defaultGateway,omitempty"`
	// ASN is the router's AS number. Required.
	ASN uint32 `json:"asn"`
	// Port is the router's BGP port. Default: 179.
	Port uint16 `json:"port,omitempty"`
	// HoldTime is the BGP hold time. Default: 90s; 0 or from 3s to 65535s.
	HoldTime *metav1.Duration `json:"holdTime,omitempty"`
	// PasswordFile holds the TCP MD5 password (for example a mounted Secret).
	// Default: no password. The password is never logged.
	PasswordFile string `json:"passwordFile,omitempty"`
	// LocalAddress is the source address of the session. Default: chosen by
	// the kernel's routes.
	LocalAddress string     `json:"localAddress,omitempty"`
	localAddress netip.Addr // LocalAddress, parsed by validation
	// GracefulRestart keeps the router forwarding to announced addresses while
	// the speaker restarts. Default: enabled, restart time 120s.
	GracefulRestart *GracefulRestart `json:"gracefulRestart,omitempty"`
	// PodRoutes sends this peer the pod CIDR routes (when routes.enabled).
	// Default: true.
	PodRoutes *bool `json:"podRoutes,omitempty"`
	// NodeSelector, with announceFrom Nodes, picks the nodes whose agents
	// peer with this router (for example its rack's zone label). Default:
	// every node.
	NodeSelector *metav1.LabelSelector `json:"nodeSelector,omitempty"`
	nodeSelector labels.Selector       // NodeSelector, compiled by validation; nil: every node
	// EBGPMultihop is the TTL of the session's packets, for a router that
	// is not on the speaker's segment (eBGP multihop), from 1 to 255.
	// Default: 0 (directly connected only).
	EBGPMultihop int `json:"ebgpMultihop,omitempty"`
	// TTLSecurity turns on the Generalized TTL Security Mechanism (GTSM,
	// RFC 5082) for the session: its packets leave with TTL 255, and only
	// packets from at most one hop away (ebgpMultihop hops with
	// ebgpMultihop) are taken, so that a host further away cannot reach the
	// session even with a forged source. The router must have it on too
	// (BIRD: ttl security on; FRR: neighbor ttl-security hops 1). Default:
	// false.
	TTLSecurity bool `json:"ttlSecurity,omitempty"`
	// BFD runs Bidirectional Forwarding Detection (RFC 5880) with the
	// router beside the session, so that the router drops this speaker's
	// paths within receiveInterval × multiplier of the node's failure (not
	// the hold time): single hop (RFC 5881; on an interface, between the
	// link-local addresses), or multihop (RFC 5883) with ebgpMultihop.
	// The router must run BFD for the session too
	// (docs/loadbalancer.md). Default: none.
	BFD *BFD `json:"bfd,omitempty"`
}

// BFD is a peer's BFD profile. No echo function: echo packets are the
// speaker's own, looped back by the router, which takes raw sockets.
type BFD struct {
	// ReceiveInterval is the least interval between the router's BFD
	// packets this speaker asks for, from 50ms to 10s. Default: 300ms.
	ReceiveInterval metav1.Duration `json:"receiveInterval,omitempty"`
	// TransmitInterval is the least interval between this speaker's BFD
	// packets, from 50ms to 10s. Default: 300ms.
	TransmitInterval metav1.Duration `json:"transmitInterval,omitempty"`
	// Multiplier is how many intervals without a packet make a side
	// declare the path down, from 2 to 255. Default: 3.
	Multiplier int `json:"multiplier,omitempty"`
}

// GracefulRestart configures BGP graceful restart (RFC 4724) for a peer.
type GracefulRestart struct {
	// Enabled turns graceful restart on. Default: true.
	Enabled *bool `json:"enabled,omitempty"`
	// RestartTime is how long the router keeps the routes. Default: 120s.
	RestartTime *metav1.Duration `json:"restartTime,omitempty"`
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
	// KubeletServing is about the kubelets' serving certificates.
	KubeletServing KubeletServing `json:"kubeletServing"`
}

// KubeletServing configures the approval of the kubelets' serving
// certificates (kubelets with serverTLSBootstrap: true).
type KubeletServing struct {
	// ApproveCSRs lets the leader approve a kubernetes.io/kubelet-serving
	// CertificateSigningRequest whose requester is the node itself and whose
	// names and addresses are exactly ones this provider knows for that
	// node; it leaves every other CSR alone (docs/node-lifecycle.md). Needs
	// the rights the chart's csrApproval.enabled gives. Default: false.
	ApproveCSRs bool `json:"approveCSRs,omitempty"`
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
	// PowerState are the machine's own settings for the power-state source
	// (for example its BMC address), as the source documents (a JSON
	// object). Default: none.
	PowerState json.RawMessage `json:"powerState,omitempty"`
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
	Subnet string       `json:"subnet"`
	subnet netip.Prefix // Subnet, parsed by validation
	// Region becomes topology.kubernetes.io/region.
	Region string `json:"region,omitempty"`
	// Zone becomes topology.kubernetes.io/zone.
	Zone string `json:"zone,omitempty"`
}

// PowerState names the source of machines' power state.
type PowerState struct {
	// Source is the name of a registered power-state source. Default: "none".
	Source string `json:"source,omitempty"`
	// Settings configure the source, as it documents (a JSON object).
	// Default: none.
	Settings json.RawMessage `json:"settings,omitempty"`
	// OutOfService, when enabled, lets the leader mark a NotReady node
	// whose machine the source has said is off for confirmFor with the
	// node.kubernetes.io/out-of-service taint, so that Kubernetes deletes its
	// pods and detaches their volumes without waiting for a person
	// (docs/node-lifecycle.md). Default: off.
	OutOfService OutOfService `json:"outOfService"`
	// Fencing, when enabled, lets the leader power off through the BMC a
	// node that is NotReady for longer than after while its source says
	// On (docs/node-lifecycle.md, "Fencing"). It needs a source that can
	// power machines off (ipmi, redfish). Default: off.
	Fencing Fencing `json:"fencing"`
}

// Fencing configures the power-off of NotReady nodes through their BMCs.
type Fencing struct {
	// Enabled turns fencing on. Default: false.
	Enabled bool `json:"enabled,omitempty"`
	// After is how long a node must be NotReady (its Ready condition not
	// True) before it is fenced. From 1s to 1h. Default: 60s.
	After *metav1.Duration `json:"after,omitempty"`
	// MaxNodes is the most nodes fenced and not Ready again at once: more
	// nodes due wait (the longest NotReady is fenced first) until a fenced
	// one is Ready again. At least 1. Default: 1.
	MaxNodes *int32 `json:"maxNodes,omitempty"`
	// MaxShare, a percentage of the nodes ("40%"), lowers the limit to
	// that share of the cluster's nodes (rounded down) when it is below
	// maxNodes. From 1% to 100%. Default: none (maxNodes alone).
	MaxShare string `json:"maxShare,omitempty"`
	// DryRun only records the Event WouldFence: nothing is powered off.
	// Default: false.
	DryRun bool `json:"dryRun,omitempty"`
}

// OutOfService configures the out-of-service taint of powered-off nodes.
type OutOfService struct {
	// Enabled turns the taint on. It needs a source other than none.
	// Default: false.
	Enabled bool `json:"enabled,omitempty"`
	// ConfirmFor is how long the source must keep saying Off, for a
	// NotReady node, before the taint. From 1s to 10m. Default: 10s.
	ConfirmFor *metav1.Duration `json:"confirmFor,omitempty"`
	// FastPath also asks the source at once about a node whose
	// kube-proxy health check (healthChecks' port, probed by the leader)
	// fails, without waiting for the node to be NotReady: an Off said for
	// confirmFor taints it then, and the leader force-deletes the
	// Terminating pods of the nodes it tainted while their source says
	// Off (deletePods' default). It needs enabled and the health checks
	// on, and kube-proxy's health port answered on every node.
	// Default: false.
	FastPath bool `json:"fastPath,omitempty"`
	// DeletePods lets the leader force-delete the Terminating pods of a
	// node it tainted, while the node's source says Off, instead of
	// leaving them to Kubernetes' pod garbage collector (which looks every
	// 20 s, and only at NotReady nodes). It needs the chart's
	// powerState.outOfService.deletePods or fastPath (pods list and
	// delete). Default: the value of fastPath.
	DeletePods *bool `json:"deletePods,omitempty"`
}
