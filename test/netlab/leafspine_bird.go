package netlab

import (
	"fmt"
	"net/netip"
	"strings"
)

// lsNodeProtocol is the BIRD protocol of a ToR's session with node i of its
// rack, family f.
func lsNodeProtocol(f Family, i int) string { return fmt.Sprintf("node%d_%d", i, f) }

// lsSpineProtocol is the BIRD protocol of a ToR's session with the spine.
func lsSpineProtocol(f Family) string { return fmt.Sprintf("spine_%d", f) }

// lsTorProtocol is the BIRD protocol of the spine's session with ToR r.
func lsTorProtocol(f Family, r int) string { return fmt.Sprintf("tor%d_%d", r, f) }

// lsKernelProtocols install the BGP routes in the kernel; equal paths (one
// per node at a ToR, one per ToR at the spine) become one ECMP route. BGP
// routes only: the connected routes are the kernel's own.
const lsKernelProtocols = `# Install BGP routes in the kernel; equal paths (one per node, or one per
# ToR at the spine) merge into one ECMP route.
protocol kernel kernel4 {
	merge paths on;
	ipv4 { import none; export where source = RTS_BGP; };
}

protocol kernel kernel6 {
	merge paths on;
	ipv6 { import none; export where source = RTS_BGP; };
}

`

// lsBIRDBFD is a numbered ToR's BFD with its nodes, on its bridge.
var lsBIRDBFD = lsBIRDBFDOn(bridgeName, "")

// lsBIRDBFDOn is a ToR's BFD protocol on the interfaces that match
// pattern (with what, e.g. " on their links"): the agents' profile
// (300 ms × 3), so that BIRD sees a node gone within about a second.
func lsBIRDBFDOn(pattern, what string) string {
	return `# BFD with the nodes` + what + ` (bgp.peers[].bfd: 300ms × 3): a node that stops
# answering is down within about a second, not the hold time.
protocol bfd {
	interface "` + pattern + `" {
		min rx interval 300 ms;
		min tx interval 300 ms;
		idle tx interval 300 ms;
		multiplier 3;
	};
}

`
}

// lsBIRDBFDOnLine is the line of a BGP template that asks the bfd
// protocol for a session with each neighbour.
const lsBIRDBFDOnLine = "\tbfd on;            # a node that stops answering BFD is down\n"

// lsBGPTimers make the lab's sessions come up within a second or two
// instead of BIRD's default 5 s connect delay; tests wait for them.
const lsBGPTimers = "\tconnect delay time 1;\n\tconnect retry time 2;\n\terror wait time 1, 10;\n"

// birdTorConfig is ToR r's BIRD 2 config: a passive eBGP session per node
// of the rack and family that accepts everything and sends nothing (with
// ADD-PATH receive only on Opts.AddPathTor), an eBGP session per family
// with the spine that sends it the nodes' routes and the rack's subnet, and
// the kernel protocols.
func (ls *LeafSpine) birdTorConfig(r int) (string, map[string]netip.Addr) {
	o := &ls.Opts
	peers := map[string]netip.Addr{}
	var b strings.Builder
	birdTorHead(&b, r, "")
	b.WriteString("# The rack's node subnet, announced to the spine so that the nodes' own\n# addresses are reachable from other racks.\n")
	fmt.Fprintf(&b, "protocol direct rack {\n\tipv4;\n\tipv6;\n\tinterface %q;\n}\n\n", bridgeName)
	b.WriteString(lsKernelProtocols)
	if o.BFD {
		b.WriteString(lsBIRDBFD)
	}
	for _, f := range []Family{IPv4, IPv6} {
		fmt.Fprintf(&b, "# The nodes (%s): each node's agent dials its own session and announces\n", channel(f))
		b.WriteString("# each address with itself as next hop; the ToR sends the nodes nothing\n# (their default route points to it).\n")
		fmt.Fprintf(&b, "template bgp nodes%d {\n", f)
		fmt.Fprintf(&b, "\tlocal %s as %d;\n", LeafSpineTorAddr(f, r), o.TorASN[r])
		b.WriteString("\tpassive on;\n")
		if o.BFD {
			b.WriteString(lsBIRDBFDOnLine)
		}
		b.WriteString(lsBGPTimers)
		if o.Password != "" {
			fmt.Fprintf(&b, "\tpassword %q;\n", o.Password)
		}
		fmt.Fprintf(&b, "\t%s {\n\t\timport all;\n\t\texport none;\n", channel(f))
		if o.addPath(r) {
			b.WriteString("\t\tadd paths rx;\n")
		} else {
			b.WriteString("\t\t# no ADD-PATH: one path per node anyway, each on its own session\n")
		}
		b.WriteString("\t};\n}\n\n")
		for i := range ls.Racks[r] {
			name := lsNodeProtocol(f, i)
			peers[name] = LeafSpineNodeAddr(f, r, i)
			fmt.Fprintf(&b, "protocol bgp %s from nodes%d {\n\tneighbor %s as %d;\n}\n\n", name, f, peers[name], o.NodeASN)
		}
	}
	ls.birdTorSpine(&b, r, peers, true)
	return b.String(), peers
}

// birdTorHead writes the start of ToR r's BIRD config: which lab and rack
// (with what, e.g. ", unnumbered"), the log, the router ID and the device
// protocol.
func birdTorHead(b *strings.Builder, r int, what string) {
	fmt.Fprintf(b, "# ToR of rack %d (test/netlab leaf-spine lab%s), BIRD 2\n", r, what)
	b.WriteString("log stderr all;\n")
	fmt.Fprintf(b, "router id %s;\n\n", LeafSpineTorAddr(IPv4, r))
	b.WriteString("protocol device {\n\tscan time 10;\n}\n\n")
}

// birdTorSpine writes ToR r's eBGP session per family with the spine,
// which gets the nodes' routes and, with subnet, the rack's subnet (the
// direct protocol "rack"), and adds them to peers.
func (ls *LeafSpine) birdTorSpine(b *strings.Builder, r int, peers map[string]netip.Addr, subnet bool) {
	o := &ls.Opts
	for _, f := range []Family{IPv4, IPv6} {
		name := lsSpineProtocol(f)
		peers[name] = LeafSpineSpineAddr(f, r)
		export := "source = RTS_BGP"
		if subnet {
			fmt.Fprintf(b, "# The spine (%s): it gets the nodes' routes (next hop: this ToR) and the\n# rack's subnet.\n", channel(f))
			export += ` || proto = "rack"`
		} else {
			fmt.Fprintf(b, "# The spine (%s): it gets the nodes' routes (next hop: this ToR).\n", channel(f))
		}
		fmt.Fprintf(b, "protocol bgp %s {\n", name)
		fmt.Fprintf(b, "\tlocal %s as %d;\n", LeafSpineTorUplinkAddr(f, r), o.TorASN[r])
		fmt.Fprintf(b, "\tneighbor %s as %d;\n", peers[name], o.SpineASN)
		b.WriteString(lsBGPTimers)
		fmt.Fprintf(b, "\t%s {\n\t\timport all;\n\t\texport where %s;\n\t};\n}\n\n", channel(f), export)
	}
}

// birdSpineConfig is the spine's BIRD 2 config: an eBGP session per ToR and
// family, routes of both ToRs merged into ECMP kernel routes (BIRD merges
// paths of different neighbor ASes when AS path length, origin, local
// preference and IGP metric are equal, which is what FRR's
// multipath-relax does), and the client subnet announced to the ToRs.
func (ls *LeafSpine) birdSpineConfig() (string, map[string]netip.Addr) {
	o := &ls.Opts
	peers := map[string]netip.Addr{}
	var b strings.Builder
	b.WriteString("# Spine (test/netlab leaf-spine lab), BIRD 2\n")
	b.WriteString("log stderr all;\n")
	fmt.Fprintf(&b, "router id %s;\n\n", LeafSpineClientGateway(IPv4))
	b.WriteString("protocol device {\n\tscan time 10;\n}\n\n")
	b.WriteString("# The client's subnet, announced to the ToRs for the way back.\n")
	fmt.Fprintf(&b, "protocol direct clients {\n\tipv4;\n\tipv6;\n\tinterface %q;\n}\n\n", lsSpineClient)
	b.WriteString(lsKernelProtocols)
	for _, f := range []Family{IPv4, IPv6} {
		for r := range ls.Tors {
			name := lsTorProtocol(f, r)
			peers[name] = LeafSpineTorUplinkAddr(f, r)
			fmt.Fprintf(&b, "protocol bgp %s {\n", name)
			fmt.Fprintf(&b, "\tlocal %s as %d;\n", LeafSpineSpineAddr(f, r), o.SpineASN)
			fmt.Fprintf(&b, "\tneighbor %s as %d;\n", peers[name], o.TorASN[r])
			b.WriteString(lsBGPTimers)
			fmt.Fprintf(&b, "\t%s {\n\t\timport all;\n\t\texport where source = RTS_BGP || proto = \"clients\";\n\t};\n}\n\n", channel(f))
		}
	}
	return b.String(), peers
}
