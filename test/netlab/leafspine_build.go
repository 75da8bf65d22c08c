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
	}
	return nil
}

func (ls *LeafSpine) addNamespace(ns string) error { return addNamespace(&ls.mu, &ls.namespaces, ns) }

// lsConfigureLink gives dev in ns the prefixes' addresses and brings it up,
// without IPv6 link-local addresses (as configureLink).
func lsConfigureLink(ns, dev string, prefixes ...netip.Prefix) error {
	cmds := [][]string{{"link", "set", "dev", dev, "addrgenmode", "none"}}
	for _, p := range prefixes {
		if p.Addr().Is4() {
			cmds = append(cmds, []string{"addr", "add", p.String(), "dev", dev})
		} else {
			cmds = append(cmds, []string{"-6", "addr", "add", p.String(), "dev", dev, "nodad"})
		}
	}
	cmds = append(cmds, []string{"link", "set", "dev", dev, "up"})
	for _, c := range cmds {
		if err := ipn(ns, c...); err != nil {
			return err
		}
	}
	return nil
}

// lsNeighbors gives the two ends of an IPv6 link permanent neighbour
// entries for each other's address: the links have no link-local addresses,
// and without one the kernel cannot solicit a neighbour for a packet whose
// source is not on the outgoing link (a forwarded packet, a reply from a VIP
// on lo). See Lab.staticNeighbors.
func lsNeighbors(nsA, devA string, addrA netip.Addr, nsB, devB string, addrB netip.Addr) error {
	macA, err := linkMAC(nsA, devA)
	if err != nil {
		return err
	}
	macB, err := linkMAC(nsB, devB)
	if err != nil {
		return err
	}
	if err := ipn(nsA, "-6", "neigh", "replace", addrB.String(), "lladdr", macB, "dev", devA, "nud", "permanent"); err != nil {
		return err
	}
	return ipn(nsB, "-6", "neigh", "replace", addrA.String(), "lladdr", macA, "dev", devB, "nud", "permanent")
}

// veth makes a veth pair between two namespaces.
func veth(nsA, devA, nsB, devB string) error {
	return ipn(nsA, "link", "add", devA, "type", "veth", "peer", "name", devB, "netns", nsB)
}

func (ls *LeafSpine) buildClient() error {
	if err := veth(ls.Client, nsLink, ls.Spine, lsSpineClient); err != nil {
		return err
	}
	if err := lsConfigureLink(ls.Spine, lsSpineClient,
		netip.PrefixFrom(LeafSpineClientGateway(IPv4), 24), netip.PrefixFrom(LeafSpineClientGateway(IPv6), 64)); err != nil {
		return err
	}
	if err := lsConfigureLink(ls.Client, nsLink,
		netip.PrefixFrom(LeafSpineClientAddr(IPv4), 24), netip.PrefixFrom(LeafSpineClientAddr(IPv6), 64)); err != nil {
		return err
	}
	if err := lsNeighbors(ls.Spine, lsSpineClient, LeafSpineClientGateway(IPv6), ls.Client, nsLink, LeafSpineClientAddr(IPv6)); err != nil {
		return err
	}
	if err := ipn(ls.Client, defaultRouteArgs(LeafSpineClientGateway(IPv4))...); err != nil {
		return err
	}
	return ipn(ls.Client, defaultRouteArgs(LeafSpineClientGateway(IPv6))...)
}

// buildRack makes ToR r's uplink to the spine, its bridge with the rack's
// subnet, and the rack's nodes on it with the ToR as their gateway.
func (ls *LeafSpine) buildRack(r int) error {
	tor := ls.Tors[r]
	if err := veth(tor, lsUplink, ls.Spine, lsSpineTorLink(r)); err != nil {
		return err
	}
	for _, f := range []Family{IPv4, IPv6} {
		if err := lsConfigureLink(ls.Spine, lsSpineTorLink(r), netip.PrefixFrom(LeafSpineSpineAddr(f, r), lsUplinkBits(f))); err != nil {
			return err
		}
		if err := lsConfigureLink(tor, lsUplink, netip.PrefixFrom(LeafSpineTorUplinkAddr(f, r), lsUplinkBits(f))); err != nil {
			return err
		}
	}
	if err := lsNeighbors(ls.Spine, lsSpineTorLink(r), LeafSpineSpineAddr(IPv6, r), tor, lsUplink, LeafSpineTorUplinkAddr(IPv6, r)); err != nil {
		return err
	}

	if err := ipn(tor, "link", "add", bridgeName, "type", "bridge", "mcast_snooping", "0"); err != nil {
		return err
	}
	// A bridge takes the lowest MAC of its ports unless its own is set, and
	// a change flushes its neighbour entries, the permanent ones too: pin it.
	mac, err := linkMAC(tor, bridgeName)
	if err != nil {
		return err
	}
	if err := ipn(tor, "link", "set", "dev", bridgeName, "address", mac); err != nil {
		return err
	}
	if err := lsConfigureLink(tor, bridgeName,
		netip.PrefixFrom(LeafSpineTorAddr(IPv4, r), 24), netip.PrefixFrom(LeafSpineTorAddr(IPv6, r), 64)); err != nil {
		return err
	}
	// The ToR's sessions: with the nodes on the bridge, with the spine on
	// the uplink.
	if err := ls.routers[tor].rt.prepareLinks(bridgeName, lsUplink); err != nil {
		return err
	}
	for i, ns := range ls.Racks[r] {
		port := lsNodePort(i)
		if err := veth(ns, nsLink, tor, port); err != nil {
			return err
		}
		if err := ipn(tor, "link", "set", "dev", port, "addrgenmode", "none"); err != nil {
			return err
		}
		if err := ipn(tor, "link", "set", "dev", port, "master", bridgeName, "up"); err != nil {
			return err
		}
		if err := lsConfigureLink(ns, nsLink,
			netip.PrefixFrom(LeafSpineNodeAddr(IPv4, r, i), 24), netip.PrefixFrom(LeafSpineNodeAddr(IPv6, r, i), 64)); err != nil {
			return err
		}
		if err := lsNeighbors(tor, bridgeName, LeafSpineTorAddr(IPv6, r), ns, nsLink, LeafSpineNodeAddr(IPv6, r, i)); err != nil {
			return err
		}
		if err := ipn(ns, defaultRouteArgs(LeafSpineTorAddr(IPv4, r))...); err != nil {
			return err
		}
		if err := ipn(ns, defaultRouteArgs(LeafSpineTorAddr(IPv6, r))...); err != nil {
			return err
		}
	}
	return nil
}

// lsStartTimeout bounds the wait for the ToR–spine sessions in Start.
const lsStartTimeout = 30 * time.Second
