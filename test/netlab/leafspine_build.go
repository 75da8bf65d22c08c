package netlab

import (
	"context"
	"fmt"
	"net/netip"
	"time"
)

// Interface names inside the leaf-spine namespaces (a namespace has its own
// names, so they are short and fixed; namespaces carry the lab's id).
const (
	lsUplink      = "uplink" // a ToR's link to the spine
	lsSpineClient = "client" // the spine's link to the client
)

// lsSpineTorLink is the spine's link to ToR r.
func lsSpineTorLink(r int) string { return fmt.Sprintf("tor%d", r) }

// lsNodePort is the ToR's bridge port of node i of its rack.
func lsNodePort(i int) string { return fmt.Sprintf("n%d", i) }

// build makes the namespaces and links and starts the routers; on error
// Close undoes what exists.
func (ls *LeafSpine) build() error {
	all := []string{ls.Spine, ls.Client, ls.Tors[0], ls.Tors[1]}
	all = append(all, ls.Racks[0]...)
	all = append(all, ls.Racks[1]...)
	for _, ns := range all {
		if err := ls.addNamespace(ns); err != nil {
			return err
		}
	}
	for _, ns := range []string{ls.Spine, ls.Tors[0], ls.Tors[1]} {
		if _, err := output("ip", "netns", "exec", ns, "sysctl", "-q", "-w",
			"net.ipv4.ip_forward=1",
			"net.ipv6.conf.all.forwarding=1",
			// Hash on ports too, so connections from the one client spread
			// over the next hops of an ECMP route.
			"net.ipv4.fib_multipath_hash_policy=1",
			"net.ipv6.fib_multipath_hash_policy=1"); err != nil {
			return err
		}
	}
	// Policy 1 takes the hash a packet already carries, and across veths a
	// packet keeps the one its socket gave it: the ToR would hash each flow
	// as the spine did, and the flows the spine sends to a ToR would all
	// take the same node there (polarization). The ToRs hash the 5-tuple
	// afresh instead (policy 3 with these fields: source and destination
	// address, protocol, source and destination port; Linux 5.12). An
	// older kernel keeps policy 1 at the ToRs: the spine still spreads
	// flows over both racks, but a ToR sends all of them to one node.
	for _, ns := range ls.Tors {
		_, _ = output("ip", "netns", "exec", ns, "sysctl", "-q", "-w",
			"net.ipv4.fib_multipath_hash_fields=0x0037",
			"net.ipv4.fib_multipath_hash_policy=3",
			"net.ipv6.fib_multipath_hash_fields=0x0037",
			"net.ipv6.fib_multipath_hash_policy=3")
	}
	if err := ls.addRouters(); err != nil {
		return err
	}
	if err := ls.buildClient(); err != nil {
		return err
	}
	for r := range ls.Tors {
		if err := ls.buildRack(r); err != nil {
			return err
		}
	}
	if err := ls.startRouters(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), lsStartTimeout)
	defer cancel()
	for r := range ls.Tors {
		if err := ls.WaitEstablished(ctx, ls.Spine, LeafSpineTorUplinkAddr(IPv4, r), LeafSpineTorUplinkAddr(IPv6, r)); err != nil {
			return fmt.Errorf("spine sessions with ToR %d: %w", r, err)
		}
		if ls.Opts.unnumbered(r) {
			if err := ls.waitAdvertised(ctx, r); err != nil {
				return fmt.Errorf("rack %d: %w", r, err)
			}
		}
	}
	return nil
}

func (ls *LeafSpine) addNamespace(ns string) error { return addNamespace(&ls.mu, &ls.namespaces, ns) }

func (ls *LeafSpine) buildClient() error {
	if err := veth(ls.Client, nsLink, ls.Spine, lsSpineClient); err != nil {
		return err
	}
	if err := configureLink(ls.Spine, lsSpineClient, LeafSpineClientGateway(IPv4), LeafSpineClientGateway(IPv6)); err != nil {
		return err
	}
	return routeVia(ls.Client, LeafSpineClientAddr(IPv4), LeafSpineClientAddr(IPv6),
		ls.Spine, lsSpineClient, LeafSpineClientGateway(IPv4), LeafSpineClientGateway(IPv6))
}

// buildRack makes ToR r's uplink to the spine, its bridge with the rack's
// subnet, and the rack's nodes on it with the ToR as their gateway.
func (ls *LeafSpine) buildRack(r int) error {
	tor := ls.Tors[r]
	if err := veth(tor, lsUplink, ls.Spine, lsSpineTorLink(r)); err != nil {
		return err
	}
	for _, f := range []Family{IPv4, IPv6} {
		if err := configurePrefixes(ls.Spine, lsSpineTorLink(r), netip.PrefixFrom(LeafSpineSpineAddr(f, r), lsUplinkBits(f))); err != nil {
			return err
		}
		if err := configurePrefixes(tor, lsUplink, netip.PrefixFrom(LeafSpineTorUplinkAddr(f, r), lsUplinkBits(f))); err != nil {
			return err
		}
	}
	if err := permanentNeighbors(ls.Spine, lsSpineTorLink(r), LeafSpineSpineAddr(IPv6, r), tor, lsUplink, LeafSpineTorUplinkAddr(IPv6, r)); err != nil {
		return err
	}
	if ls.Opts.unnumbered(r) {
		return ls.buildUnnumberedRack(r)
	}
	rack, err := newSegment(tor)
	if err != nil {
		return err
	}
	if err := rack.gateway(LeafSpineTorAddr(IPv4, r), LeafSpineTorAddr(IPv6, r)); err != nil {
		return err
	}
	// The ToR's sessions: with the nodes on the bridge, with the spine on
	// the uplink.
	if err := ls.routers[tor].rt.prepareLinks(bridgeName, lsUplink); err != nil {
		return err
	}
	for i, ns := range ls.Racks[r] {
		if err := rack.attachNode(ns, lsNodePort(i), LeafSpineNodeAddr(IPv4, r, i), LeafSpineNodeAddr(IPv6, r, i),
			LeafSpineTorAddr(IPv4, r), LeafSpineTorAddr(IPv6, r)); err != nil {
			return err
		}
	}
	return nil
}

// lsStartTimeout bounds the wait for the ToR–spine sessions in Start.
const lsStartTimeout = 30 * time.Second
