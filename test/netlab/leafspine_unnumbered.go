package netlab

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"text/template"
	"time"
)

// An unnumbered rack (LeafSpineOptions.Unnumbered): its ToR meets each
// node of its rack on a link of its own, without a subnet, and peers with
// the node between link-local addresses (BGP unnumbered: a session carrying
// IPv4 and IPv6, IPv4 with IPv6 next hops): FRR by interface
// (neighbor IFACE interface), BIRD by a link-local neighbour range per
// link (leafspine_unnumbered_bird.go); with LeafSpineOptions.BFD each
// session has a single-hop BFD session between the same link-local
// addresses. The ToR has fe80::1 on each link, node i
// fe80::11+i (LeafSpineNodeLinkLocal). A node keeps its addresses
// (LeafSpineNodeAddr) as /32 and /128 on its link; its IPv4 default route
// points to the ToR's link-local address, its IPv6 one comes from the ToR's
// Router Advertisements (bgpd sends them on an interface neighbour's link,
// BIRD from its radv protocol).

// unnumbered reports whether rack r is unnumbered.
func (o *LeafSpineOptions) unnumbered(r int) bool { return o.Unnumbered[r] }

// anyUnnumbered reports whether a rack is unnumbered.
func (o *LeafSpineOptions) anyUnnumbered() bool { return o.Unnumbered[0] || o.Unnumbered[1] }

// checkUnnumbered refuses what an unnumbered rack does not have.
func (o *LeafSpineOptions) checkUnnumbered() error {
	if o.anyUnnumbered() && o.Password != "" {
		return errors.New("an unnumbered rack has no password")
	}
	return nil
}

// LeafSpineNodeLinkLocal is node i's link-local address on its link to an
// unnumbered rack's ToR (fe80::11+i, host numbers as LeafSpineNodeAddr's).
func LeafSpineNodeLinkLocal(i int) netip.Addr {
	return netip.MustParseAddr(fmt.Sprintf("fe80::%d", 11+i))
}

// lsTorLinkLocal is an unnumbered rack's ToR's address on each node link.
const lsTorLinkLocal = "fe80::1"

// LeafSpineUnnumberedLink is the nodes' link to an unnumbered rack's ToR:
// the interface of their peer entry.
const LeafSpineUnnumberedLink = nsLink

// lsFRRUnnumberedTemplate is an FRR 8.4 ToR's bgpd config for an
// unnumbered rack: the example docs/leaf-spine.md gives ("Unnumbered").
var lsFRRUnnumberedTemplate = template.Must(template.New("tor").Parse(`! ToR of rack {{.Rack}} (test/netlab leaf-spine lab, unnumbered), FRR 8.4
frr defaults traditional
hostname tor{{.Rack}}
!
! the nodes get nothing from the ToR: their default route points to it
route-map NONE deny 10
!
router bgp {{.TorASN}}
 bgp router-id {{.RouterID}}
 ! accept eBGP routes without an inbound policy (FRR drops them by default)
 no bgp ebgp-requires-policy
 no bgp default ipv4-unicast
 ! one ECMP route across the nodes, also when each node has its own ASN
 bgp bestpath as-path multipath-relax
 ! the nodes: one link each, a session between link-local addresses (the
 ! node's learned from its Router Advertisements), IPv4 with IPv6 next hops
{{- if .BFD}}
 ! BFD with each node between the same link-local addresses, bfdd's
 ! profile "nodes" (300 ms × 3)
{{- end}}
{{- range .Ports}}
 neighbor {{.}} interface remote-as {{$.NodeASN}}
 neighbor {{.}} capability extended-nexthop
{{- if $.BFD}}
 neighbor {{.}} bfd profile nodes
{{- end}}
{{- end}}
 ! the spine
 neighbor {{.Spine4}} remote-as {{.SpineASN}}
 neighbor {{.Spine6}} remote-as {{.SpineASN}}
 !
 address-family ipv4 unicast
  maximum-paths 64
{{- range .Ports}}
  neighbor {{.}} activate
  neighbor {{.}} route-map NONE out
{{- end}}
  neighbor {{.Spine4}} activate
 exit-address-family
 !
 address-family ipv6 unicast
  maximum-paths 64
{{- range .Ports}}
  neighbor {{.}} activate
  neighbor {{.}} route-map NONE out
{{- end}}
  neighbor {{.Spine6}} activate
 exit-address-family
exit
`))

// frrUnnumberedTorConfig renders lsFRRUnnumberedTemplate for ToR r.
func (ls *LeafSpine) frrUnnumberedTorConfig(r int) (string, error) {
	o := &ls.Opts
	ports := make([]string, o.NodesPerRack)
	for i := range ports {
		ports[i] = lsNodePort(i)
	}
	var b strings.Builder
	err := lsFRRUnnumberedTemplate.Execute(&b, map[string]any{
		"Rack":     r,
		"TorASN":   o.TorASN[r],
		"RouterID": LeafSpineTorAddr(IPv4, r),
		"NodeASN":  o.NodeASN,
		"Ports":    ports,
		"Spine4":   LeafSpineSpineAddr(IPv4, r),
		"Spine6":   LeafSpineSpineAddr(IPv6, r),
		"SpineASN": o.SpineASN,
		"BFD":      o.BFD,
	})
	if err != nil {
		return "", fmt.Errorf("netlab FRR unnumbered ToR config: %w", err)
	}
	return b.String(), nil
}

// buildUnnumberedRack links each node of rack r to its ToR on a link of
// its own, with link-local addresses only; the uplink exists already.
func (ls *LeafSpine) buildUnnumberedRack(r int) error {
	tor := ls.Tors[r]
	var ports []string
	for i, ns := range ls.Racks[r] {
		port := lsNodePort(i)
		if err := veth(ns, nsLink, tor, port); err != nil {
			return err
		}
		if err := ipn(tor, "link", "set", "dev", port, "addrgenmode", "none"); err != nil {
			return err
		}
		// The ToR's link-local address, the nodes' gateway and BGP
		// neighbour; bgpd and BIRD's radv send it as the source of their
		// Router Advertisements.
		if err := ipn(tor, "-6", "addr", "add", lsTorLinkLocal+"/64", "dev", port, "nodad"); err != nil {
			return err
		}
		ports = append(ports, port)
		if err := configurePrefixes(ns, nsLink, netip.PrefixFrom(LeafSpineNodeAddr(IPv4, r, i), 32),
			netip.PrefixFrom(LeafSpineNodeAddr(IPv6, r, i), 128)); err != nil {
			return err
		}
		if err := ipn(ns, "-6", "addr", "add", netip.PrefixFrom(LeafSpineNodeLinkLocal(i), 64).String(), "dev", nsLink, "nodad"); err != nil {
			return err
		}
		// IPv4 through an IPv6 next hop (RFC 8950's forwarding, Linux 5.2).
		if err := ipn(ns, "-4", "route", "add", "default", "via", "inet6", lsTorLinkLocal, "dev", nsLink); err != nil {
			return err
		}
	}
	if err := ls.routers[tor].rt.prepareLinks(lsUplink); err != nil {
		return err
	}
	for _, port := range ports {
		if err := ipn(tor, "link", "set", "dev", port, "up"); err != nil {
			return err
		}
	}
	return nil
}

// UnnumberedAgentCloudConfig is the node agents' cloud-config for a lab
// with unnumbered racks, as docs/leaf-spine.md gives it: announceFrom
// Nodes, one pool of the given ranges, and per rack, selected by its zone,
// with its ToR's AS and the given hold time: for an unnumbered rack 1 the
// peer on the nodes' link to their ToR (LeafSpineUnnumberedLink), the
// router found there; for an unnumbered rack 0 the gateway of the nodes'
// IPv6 default route (defaultGateway IPv6), which is the ToR's link-local
// address on that link, learned from its Router Advertisements, and so the
// same link-local session (their IPv4 default route has that gateway too);
// for a numbered rack the gateways of both default routes (defaultGateway,
// IPv4 and IPv6). With Opts.BFD every peer has LeafSpineBFD.
func (ls *LeafSpine) UnnumberedAgentCloudConfig(holdTime time.Duration, pool ...string) string {
	var b strings.Builder
	b.WriteString(ls.agentConfigHead(pool))
	for r := range ls.Tors {
		sel := fmt.Sprintf("asn: %d, holdTime: %s, nodeSelector: {matchLabels: {%s: %s}}", ls.Opts.TorASN[r], holdTime, LeafSpineZoneLabel, LeafSpineZone(r))
		if ls.Opts.BFD {
			sel += ", " + LeafSpineBFD
		}
		switch {
		case ls.Opts.unnumbered(r) && r == 0:
			fmt.Fprintf(&b, "  - {defaultGateway: IPv6, %s}\n", sel)
		case ls.Opts.unnumbered(r):
			fmt.Fprintf(&b, "  - {interface: %s, %s}\n", LeafSpineUnnumberedLink, sel)
		default:
			for _, f := range []string{"IPv4", "IPv6"} {
				fmt.Fprintf(&b, "  - {defaultGateway: %s, %s}\n", f, sel)
			}
		}
	}
	return b.String()
}

// UnnumberedNodeLinkLocals are the link-local addresses of the nodes of
// unnumbered rack r: their ToR's next hops for what they announce, IPv4
// and IPv6.
func (ls *LeafSpine) UnnumberedNodeLinkLocals(r int) []netip.Addr {
	out := make([]netip.Addr, len(ls.Racks[r]))
	for i := range out {
		out[i] = LeafSpineNodeLinkLocal(i)
	}
	return out
}
