package netlab

import (
	"fmt"
	"net/netip"
)

// NeighborIDs maps each neighbor address of an established session to the
// router ID the neighbor gave in its OPEN, as the router shows it (BIRD's
// "Neighbor ID", FRR's remoteRouterId).
func (n *routerNS) NeighborIDs() (map[netip.Addr]netip.Addr, error) {
	ids, err := n.rt.neighborIDs()
	if err != nil {
		return nil, fmt.Errorf("netlab neighbor IDs: %w", err)
	}
	return ids, nil
}

func (r *birdRouter) neighborIDs() (map[netip.Addr]netip.Addr, error) {
	out, err := r.n.Birdc("show", "protocols", "all")
	if err != nil {
		return nil, err
	}
	ids := map[netip.Addr]netip.Addr{}
	for _, p := range ParseBirdProtocols(out) {
		addr, ok := r.cfg.peerAddr(p.Name)
		if p.Proto != "BGP" || !ok || p.SessionState() != "Established" {
			continue
		}
		if ids[addr], err = netip.ParseAddr(p.NeighborID); err != nil {
			return nil, fmt.Errorf("%s: %w", p.Name, err)
		}
	}
	return ids, nil
}

func (r *frrRouter) neighborIDs() (map[netip.Addr]netip.Addr, error) {
	out, err := r.n.Vtysh("show bgp neighbors json")
	if err != nil {
		return nil, err
	}
	ns, err := parseFRRNeighborFields([]byte(out))
	if err != nil {
		return nil, err
	}
	ids := map[netip.Addr]netip.Addr{}
	for addr, nb := range ns {
		if nb.BgpState != "Established" {
			continue
		}
		if ids[addr], err = netip.ParseAddr(nb.RemoteRouterID); err != nil {
			return nil, fmt.Errorf("%s: %w", addr, err)
		}
	}
	return ids, nil
}
