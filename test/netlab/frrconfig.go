package netlab

import (
	"fmt"
	"strings"
)

// frrConfig is bgpd's configuration, the FRR twin of birdConfig and the same
// shape as the FRR example in docs/routes.md: one passive eBGP session per
// speaker address (and node address of NodePeers) and family, grouped per family, that accepts every route
// and sends none, and up to 64 paths per prefix installed as one ECMP route.
// FRR receives ADD-PATH paths by default (nothing to configure) and is a
// graceful-restart helper by default (kept at its defaults, see the comment
// in the config).
func (l *Lab) frrConfig() (string, error) {
	var b strings.Builder
	b.WriteString("! test/netlab's router, FRR 8.4 (what bird.go's birdConfig is for BIRD)\n")
	b.WriteString("frr defaults traditional\nhostname netlab-router\n!\n")
	b.WriteString("! the speakers get nothing from the router\nroute-map NONE deny 10\n!\n")
	if l.Opts.FRRExtra != "" {
		b.WriteString(l.Opts.FRRExtra + "\n!\n")
	}
	fmt.Fprintf(&b, "router bgp %d\n", l.Opts.RouterASN)
	b.WriteString(" ! set by hand: a router without an IPv4 address has none to take it from\n")
	fmt.Fprintf(&b, " bgp router-id %s\n", RouterAddr(IPv4))
	b.WriteString(" ! accept eBGP routes without an inbound policy (FRR drops them by default)\n")
	b.WriteString(" no bgp ebgp-requires-policy\n")
	b.WriteString(" ! a session carries the family of its address only, as with BIRD\n")
	b.WriteString(" no bgp default ipv4-unicast\n")
	b.WriteString(" ! one ECMP route also from replicas with different ASNs\n")
	b.WriteString(" bgp bestpath as-path multipath-relax\n")
	b.WriteString(" ! Graceful restart: FRR is a helper by default (no graceful-restart line).\n")
	b.WriteString(" ! When a speaker's session drops without a NOTIFICATION, FRR keeps its\n")
	b.WriteString(" ! routes, marked stale, for the restart time the speaker announced\n")
	b.WriteString(" ! (pkg/bgp: 120 s); once the session is back, until the speaker's\n")
	b.WriteString(" ! End-of-RIB, at most stalepath-time (default 360 s). A Cease removes them.\n")
	for _, f := range l.Opts.families() {
		group := frrGroup(f)
		fmt.Fprintf(&b, " neighbor %s peer-group\n", group)
		fmt.Fprintf(&b, " neighbor %s remote-as %d\n", group, l.Opts.SpeakerASN)
		fmt.Fprintf(&b, " neighbor %s passive\n", group) // the speakers dial; they do not listen
		if l.Opts.BFD {
			fmt.Fprintf(&b, " neighbor %s bfd profile speakers\n", group)
		}
		for _, p := range l.Opts.peers(f) {
			if p.routerID.IsValid() {
				fmt.Fprintf(&b, " ! its router ID: %s, folded from its address\n", p.routerID)
			}
			fmt.Fprintf(&b, " neighbor %s peer-group %s\n", p.addr, group)
			if pw := p.password; pw != "" {
				if err := checkFRRPassword(pw); err != nil {
					return "", fmt.Errorf("netlab FRR config, peer %s: %w", p.addr, err)
				}
				fmt.Fprintf(&b, " neighbor %s password %s\n", p.addr, pw)
			}
		}
	}
	frrUnnumberedSpeaker(&b, &l.Opts)
	for _, f := range l.Opts.families() {
		fmt.Fprintf(&b, " !\n address-family %s unicast\n", channel(f))
		b.WriteString("  maximum-paths 64\n")
		fmt.Fprintf(&b, "  neighbor %s activate\n", frrGroup(f))
		fmt.Fprintf(&b, "  neighbor %s route-map NONE out\n", frrGroup(f))
		frrUnnumberedSpeakerAF(&b, &l.Opts)
		if l.Opts.FRRImport != "" {
			fmt.Fprintf(&b, "  neighbor %s route-map %s in\n", frrGroup(f), l.Opts.FRRImport)
		}
		b.WriteString(" exit-address-family\n")
	}
	b.WriteString("exit\n")
	if l.Opts.FRRAfter != "" {
		b.WriteString("!\n" + l.Opts.FRRAfter + "\n")
	}
	return b.String(), nil
}

// frrGroup is the peer group of the sessions of family f.
func frrGroup(f Family) string {
	if f == IPv6 {
		return "CCM6"
	}
	return "CCM"
}
