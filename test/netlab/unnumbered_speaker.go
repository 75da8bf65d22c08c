package netlab

import (
	"fmt"
	"net/netip"
	"strings"
)

// An unnumbered speaker (Options.UnnumberedSpeaker): a speaker on the host
// whose peer is the router by interface (bgp.peers[].interface: HostLink),
// as a CCM replica on a node whose link to the router has no subnet in
// common with it. The node segment is shared (the host link is a port of
// the router's bridge, beside the nodes), which is what a replica needs:
// its paths keep the nodes' addresses as next hops, which the router must
// reach on the session's link. The router takes the session from any
// link-local address on the segment (BIRD: a dynamic neighbor range on the
// bridge; FRR: neighbor IFACE interface, the speaker's address learned from
// its Router Advertisements), carrying IPv4 (extended next hop, RFC 8950)
// and IPv6. FRR advertises itself there (bgpd does on an interface
// neighbour's link); the host link takes those Router Advertisements only
// to learn the router (no default route, no prefix: the host namespace
// keeps its own routes), and the nodes not at all.

// RouterLinkLocal is the router's link-local address on the node segment
// (FRR's on every link of the router, see frrRouter.prepareLinks).
var RouterLinkLocal = netip.MustParseAddr("fe80::1")

// SpeakerLinkLocal is the host link's link-local address with
// Options.UnnumberedSpeaker: the unnumbered speaker's session address.
var SpeakerLinkLocal = netip.MustParseAddr("fe80::2")

// unnumberedSpeakerProtocol is BIRD's protocol of the unnumbered speaker;
// the session it spawns when the speaker dials is named with it and "_".
const unnumberedSpeakerProtocol = "spkll"

// birdUnnumberedSpeaker is what Options.UnnumberedSpeaker adds to BIRD's
// config (docs/leaf-spine.md shows it). No Router Advertisements: BIRD's
// carry no source link-layer address, so a host that takes no default route
// from them (router lifetime 0, or the host link's accept_ra_defrtr 0) keeps
// no neighbour entry flagged as a router either, and the speaker could not
// find the router by them; its peer names RouterLinkLocal instead
// (bgp.peers[].linkLocalAddress).
func (o *Options) birdUnnumberedSpeaker() string {
	return fmt.Sprintf(`# A speaker with an interface peer (BGP unnumbered): a session from any
# link-local address on the segment, spawned as %s_1, ..., carrying IPv4
# (extended next hop, RFC 8950) and IPv6. A replica's paths keep the
# nodes' addresses as next hops, on this same segment.
protocol bgp %s {
	interface %q;
	local as %d;
	neighbor range fe80::/10 as %d;
	dynamic name "%s_";
	passive on; # the speakers dial; they do not listen
	ipv4 {
		extended next hop on;
		import all;
		export none;
		add paths rx;
	};
	ipv6 {
		import all;
		export none;
		add paths rx;
	};
}

`, unnumberedSpeakerProtocol, unnumberedSpeakerProtocol, bridgeName,
		o.RouterASN, o.SpeakerASN, unnumberedSpeakerProtocol)
}

// frrUnnumberedSpeaker is what Options.UnnumberedSpeaker adds to FRR's
// neighbors, and frrUnnumberedSpeakerAF to each address family.
func frrUnnumberedSpeaker(b *strings.Builder, o *Options) {
	if !o.UnnumberedSpeaker {
		return
	}
	b.WriteString(" ! a speaker with an interface peer (BGP unnumbered): a session between\n")
	b.WriteString(" ! link-local addresses on the node segment, the speaker's learned from its\n")
	b.WriteString(" ! Router Advertisements, carrying IPv4 and IPv6\n")
	fmt.Fprintf(b, " neighbor %s interface remote-as %d\n", bridgeName, o.SpeakerASN)
	fmt.Fprintf(b, " neighbor %s passive\n", bridgeName)
}

func frrUnnumberedSpeakerAF(b *strings.Builder, o *Options) {
	if !o.UnnumberedSpeaker {
		return
	}
	fmt.Fprintf(b, "  neighbor %s activate\n", bridgeName)
	fmt.Fprintf(b, "  neighbor %s route-map NONE out\n", bridgeName)
}

// buildUnnumberedSpeaker gives the segment's two ends their link-local
// addresses, lets the host link learn the router from its Router
// Advertisements and nothing else, and keeps the nodes from taking them.
func (l *Lab) buildUnnumberedSpeaker() error {
	// replace: FRR's prepareLinks gave the bridge the address already.
	if err := ipn(l.Router, "-6", "addr", "replace", netip.PrefixFrom(RouterLinkLocal, 64).String(), "dev", bridgeName, "nodad"); err != nil {
		return err
	}
	if err := ipn("", "-6", "addr", "add", netip.PrefixFrom(SpeakerLinkLocal, 64).String(), "dev", l.HostLink, "nodad"); err != nil {
		return err
	}
	// accept_ra 2: also where the host forwards. Without a default
	// router, prefix or route from them, all the kernel keeps is the
	// router's neighbour entry flagged as a router, which the speaker
	// reads (pkg/bgp findRouter).
	conf := "net.ipv6.conf." + l.HostLink + "."
	if err := run("sysctl", "-q", "-w", conf+"accept_ra=2", conf+"accept_ra_defrtr=0",
		conf+"accept_ra_pinfo=0", conf+"accept_ra_rtr_pref=0"); err != nil {
		return err
	}
	for _, ns := range l.Nodes {
		if _, err := l.Exec(ns, "sysctl", "-q", "-w", "net.ipv6.conf."+nsLink+".accept_ra=0"); err != nil {
			return err
		}
	}
	return nil
}
