package bgp

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	speaker "github.com/metal-ccm/metal-ccm/pkg/bgp"
	"github.com/metal-ccm/metal-ccm/pkg/config"
)

// Errors of a peer named by the default route (bgp.peers[].defaultGateway).
var (
	// ErrNoDefaultGateway: no default route of the family has a gateway.
	ErrNoDefaultGateway = errors.New("no default route with a gateway")
	// ErrSeveralDefaultGateways: the default route has several gateways
	// (multipath), which would be several routers.
	ErrSeveralDefaultGateways = errors.New("the default route has several gateways: name the router's address")
)

// defaultGateway is the gateway of the main table's default route of a
// family where the speaker runs, and its link when the gateway is a
// link-local address; a variable for the unit tests.
var defaultGateway = mainDefaultGateway

// gatewayPeer makes peer's router the default route's gateway: its address,
// or for a link-local gateway (an IPv6 default route learned from Router
// Advertisements) a link-local session on its link.
func gatewayPeer(peer *speaker.Peer, fam config.DefaultGatewayFamily) error {
	a, link, err := defaultGateway(fam == config.DefaultGatewayIPv4)
	if err != nil {
		return fmt.Errorf("defaultGateway %s: %w", fam, err)
	}
	peer.Address = a
	if link != "" {
		peer.Interface = link
	}
	return nil
}

// mainDefaultGateway reads the default routes of the main table (a netlink
// dump: no privilege) and returns the gateway of the one with the lowest
// metric.
func mainDefaultGateway(is4 bool) (netip.Addr, string, error) {
	fam := netlink.FAMILY_V6
	if is4 {
		fam = netlink.FAMILY_V4
	}
	routes, err := netlink.RouteListFiltered(fam, &netlink.Route{Table: unix.RT_TABLE_MAIN}, netlink.RT_FILTER_TABLE)
	if err != nil {
		return netip.Addr{}, "", fmt.Errorf("routes: %w", err)
	}
	var best *netlink.Route
	for i := range routes {
		r := &routes[i]
		if r.Dst != nil {
			if ones, _ := r.Dst.Mask.Size(); ones != 0 {
				continue
			}
		}
		if best == nil || r.Priority < best.Priority {
			best = r
		}
	}
	switch {
	case best == nil:
		return netip.Addr{}, "", ErrNoDefaultGateway
	case len(best.MultiPath) > 1:
		return netip.Addr{}, "", ErrSeveralDefaultGateways
	case len(best.MultiPath) == 1:
		return gatewayAddr(best.MultiPath[0].Gw, best.MultiPath[0].LinkIndex)
	}
	return gatewayAddr(best.Gw, best.LinkIndex)
}

// gatewayAddr is gw, and the name of its link when it is a link-local
// address.
func gatewayAddr(gw []byte, linkIndex int) (netip.Addr, string, error) {
	a, ok := netip.AddrFromSlice(gw)
	if !ok {
		return netip.Addr{}, "", ErrNoDefaultGateway
	}
	a = a.Unmap()
	if !a.Is6() || !a.IsLinkLocalUnicast() {
		return a, "", nil
	}
	link, err := netlink.LinkByIndex(linkIndex)
	if err != nil {
		return netip.Addr{}, "", fmt.Errorf("link of gateway %s: %w", a, err)
	}
	return a, link.Attrs().Name, nil
}
