package bgp

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Errors of finding the router on a link (a peer with an Interface).
var (
	// ErrNoRouter: nothing on the link is known as a router yet (no Router
	// Advertisement came, no neighbour entry is flagged as a router).
	ErrNoRouter = errors.New("no IPv6 router known on the link")
	// ErrSeveralRouters: more than one router is known on the link, and
	// none was named (Peer.Address).
	ErrSeveralRouters = errors.New("several IPv6 routers on the link: name the router's link-local address")
)

// findRouter is the link-local address of the router on iface, as the
// kernel knows it without any privilege: the gateway of the routes it
// learned from the router's Router Advertisements (protocol "ra"), else
// the one neighbour entry of the link flagged as a router (the kernel
// sets the flag from Router Advertisements and Neighbor Advertisements).
// Reading either takes a netlink dump, which needs no capability; sending
// a Router Solicitation or reading the advertisements ourselves would need
// a raw socket (CAP_NET_RAW), which the node agent does not have. The
// kernel solicits a router when the link comes up and takes its
// advertisements when the link's accept_ra allows (the default without
// forwarding).
func findRouter(iface string) (netip.Addr, error) {
	link, err := netlink.LinkByName(iface)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("interface %s: %w", iface, err)
	}
	idx := link.Attrs().Index
	routes, err := netlink.RouteListFiltered(netlink.FAMILY_V6, &netlink.Route{LinkIndex: idx, Protocol: unix.RTPROT_RA},
		netlink.RT_FILTER_OIF|netlink.RT_FILTER_PROTOCOL)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("routes of %s: %w", iface, err)
	}
	var gws []netip.Addr
	for _, r := range routes {
		gws = addLinkLocal(gws, r.Gw)
	}
	if len(gws) == 0 {
		neighs, err := netlink.NeighList(idx, netlink.FAMILY_V6)
		if err != nil {
			return netip.Addr{}, fmt.Errorf("neighbours of %s: %w", iface, err)
		}
		for _, n := range neighs {
			if n.Flags&netlink.NTF_ROUTER != 0 && n.State&(netlink.NUD_FAILED|netlink.NUD_INCOMPLETE) == 0 {
				gws = addLinkLocal(gws, n.IP)
			}
		}
	}
	switch len(gws) {
	case 0:
		return netip.Addr{}, fmt.Errorf("interface %s: %w", iface, ErrNoRouter)
	case 1:
		return gws[0], nil
	}
	return netip.Addr{}, fmt.Errorf("interface %s, %v: %w", iface, gws, ErrSeveralRouters)
}

// addLinkLocal adds ip to out when it is an IPv6 link-local address not
// in it yet.
func addLinkLocal(out []netip.Addr, ip []byte) []netip.Addr {
	a, ok := netip.AddrFromSlice(ip)
	if !ok || !a.Is6() || !a.IsLinkLocalUnicast() {
		return out
	}
	for _, o := range out {
		if o == a {
			return out
		}
	}
	return append(out, a)
}
