package netlab

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
)

// lsUnnumberedNodeProtocol is the BIRD protocol of an unnumbered ToR's
// link to node i of its rack; the session it spawns when the node dials
// is named with it and "_" (node0_1, ...).
func lsUnnumberedNodeProtocol(i int) string { return fmt.Sprintf("node%d", i) }

// lsBIRDRadv is an unnumbered BIRD ToR's Router Advertisements on its node
// links: they give the nodes their IPv6 default route, and the agents the
// ToR's link-local address (bgp.peers[].interface or defaultGateway IPv6).
// BIRD, unlike FRR's interface neighbours, does not send them by itself.
const lsBIRDRadv = `# Router Advertisements on the node links (from fe80::1): the nodes' IPv6
# default route, and how their agents find the ToR on the link.
protocol radv {
	interface "n*" {
		max ra interval 10;
	};
}

`

// birdUnnumberedTorConfig is ToR r's BIRD 2 config in an unnumbered rack:
// per node link a protocol that takes a session from any link-local
// address on it (a dynamic "neighbor range" with the link's "interface":
// BIRD learns no neighbour from Router Advertisements, and the ToR then
// needs no node's address), carrying IPv4 with IPv6 next hops (extended
// next hop) and IPv6; Router Advertisements on the node links; the spine
// sessions and the kernel protocols as a numbered BIRD ToR's; with
// Opts.BFD a BFD session with each spawned one, on the node links. The map
// gives the neighbour address of a spawned session (node i's link-local
// address) and of the spine's.
func (ls *LeafSpine) birdUnnumberedTorConfig(r int) (string, func(string) (netip.Addr, bool)) {
	o := &ls.Opts
	peers := map[string]netip.Addr{}
	var b strings.Builder
	birdTorHead(&b, r, ", unnumbered")
	b.WriteString(lsKernelProtocols)
	b.WriteString(lsBIRDRadv)
	if o.BFD {
		b.WriteString(lsBIRDBFDOn("n*", " on their links"))
	}
	b.WriteString("# The nodes: one link each, a session between link-local addresses that\n")
	b.WriteString("# carries IPv4 (with the node's IPv6 link-local address as next hop,\n")
	b.WriteString("# RFC 8950) and IPv6. Each node's agent dials its own: the protocol of its\n")
	b.WriteString("# link takes it from any link-local address there and spawns the session\n")
	b.WriteString("# (node0_1, ...). The ToR sends the nodes nothing (their default routes\n# point to it).\n")
	b.WriteString("template bgp nodes {\n")
	fmt.Fprintf(&b, "\tlocal as %d;\n", o.TorASN[r])
	fmt.Fprintf(&b, "\tneighbor range fe80::/10 as %d;\n", o.NodeASN)
	b.WriteString("\tpassive on;\n")
	if o.BFD {
		b.WriteString(lsBIRDBFDOnLine)
	}
	b.WriteString(lsBGPTimers)
	b.WriteString("\tipv4 {\n\t\textended next hop on;\n\t\timport all;\n\t\texport none;\n\t};\n")
	b.WriteString("\tipv6 {\n\t\timport all;\n\t\texport none;\n\t};\n}\n\n")
	for i := range ls.Racks[r] {
		name := lsUnnumberedNodeProtocol(i)
		fmt.Fprintf(&b, "protocol bgp %s from nodes {\n\tinterface %q;\n\tdynamic name \"%s_\";\n}\n\n", name, lsNodePort(i), name)
	}
	ls.birdTorSpine(&b, r, peers, false)
	return b.String(), func(protocol string) (netip.Addr, bool) {
		if a, ok := peers[protocol]; ok {
			return a, true
		}
		for i := range ls.Racks[r] {
			if strings.HasPrefix(protocol, lsUnnumberedNodeProtocol(i)+"_") {
				return LeafSpineNodeLinkLocal(i), true
			}
		}
		return netip.Addr{}, false
	}
}

// waitAdvertised polls until each node of unnumbered rack r has the IPv6
// default route its ToR's Router Advertisements give: an agent whose peer
// is that route's gateway (defaultGateway IPv6) reads it once, when its
// speaker starts.
func (ls *LeafSpine) waitAdvertised(ctx context.Context, r int) error {
	for _, ns := range ls.Racks[r] {
		err := poll(ctx, func() (bool, string) {
			out, err := output("ip", "-n", ns, "-6", "route", "show", "default", "proto", "ra")
			if err != nil {
				return false, err.Error()
			}
			return strings.Contains(out, "via "+lsTorLinkLocal+" "), "no default route from Router Advertisements: " + out
		})
		if err != nil {
			return fmt.Errorf("node %s: %w", ns, err)
		}
	}
	return nil
}
