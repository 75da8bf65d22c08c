package netlab

import (
	"net/netip"
)

// segment is a bridge (bridgeName) in namespace ns: the Ethernet segment a
// lab's nodes share. The one-segment lab's is in its router namespace, the
// leaf-spine lab has one per rack in the rack's ToR, and the L2 lab's is
// its switch; nodes are attached to each the same way.
type segment struct{ ns string }

// newSegment makes the bridge, without multicast snooping: the
// solicited-node multicast of a Neighbor Solicitation reaches every port,
// as on a plain switch.
func newSegment(ns string) (segment, error) {
	return segment{ns: ns}, ipn(ns, "link", "add", bridgeName, "type", "bridge", "mcast_snooping", "0")
}

// gateway gives the bridge the router's addresses on the segment (a /24
// and a /64) and brings it up. A bridge takes the lowest MAC of its ports
// unless its own is set, and a change flushes its neighbour entries, the
// permanent ones too: its MAC is pinned first.
func (s segment) gateway(addrs ...netip.Addr) error {
	mac, err := linkMAC(s.ns, bridgeName)
	if err != nil {
		return err
	}
	if err := ipn(s.ns, "link", "set", "dev", bridgeName, "address", mac); err != nil {
		return err
	}
	return configureLink(s.ns, bridgeName, addrs...)
}

// port makes dev, a link in the bridge's namespace, a port of the bridge.
func (s segment) port(dev string) error {
	if err := ipn(s.ns, "link", "set", "dev", dev, "addrgenmode", "none"); err != nil {
		return err
	}
	return ipn(s.ns, "link", "set", "dev", dev, "master", bridgeName, "up")
}

// attach links namespace ns to the segment: a veth from ns's nsLink to
// port, a port of the bridge.
func (s segment) attach(ns, port string) error {
	if err := veth(ns, nsLink, s.ns, port); err != nil {
		return err
	}
	return s.port(port)
}

// attachNode attaches node namespace ns at port with its addresses addr4
// and addr6, routed through the bridge's gw4 and gw6 (routeVia).
func (s segment) attachNode(ns, port string, addr4, addr6, gw4, gw6 netip.Addr) error {
	if err := s.attach(ns, port); err != nil {
		return err
	}
	return routeVia(ns, addr4, addr6, s.ns, bridgeName, gw4, gw6)
}

// routeVia gives namespace ns's nsLink the addresses addr4 and addr6 (a
// /24 and a /64), and default routes via a router whose dev in routerNS
// has gw4 and gw6, with permanent IPv6 neighbour entries both ways
// (permanentNeighbors).
func routeVia(ns string, addr4, addr6 netip.Addr, routerNS, dev string, gw4, gw6 netip.Addr) error {
	if err := configureLink(ns, nsLink, addr4, addr6); err != nil {
		return err
	}
	if err := permanentNeighbors(routerNS, dev, gw6, ns, nsLink, addr6); err != nil {
		return err
	}
	if err := ipn(ns, defaultRouteArgs(gw4)...); err != nil {
		return err
	}
	return ipn(ns, defaultRouteArgs(gw6)...)
}

// permanentNeighbors gives the two ends of an IPv6 link permanent
// neighbour entries for each other's address: the lab's links have no
// link-local addresses, and without one the kernel cannot solicit a
// neighbour for a packet whose source is not on the outgoing link (a
// forwarded packet, a reply from a VIP on lo).
func permanentNeighbors(nsA, devA string, addrA netip.Addr, nsB, devB string, addrB netip.Addr) error {
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
