package netlab

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
)

// Path is one BGP path the router holds for a prefix: which speaker sent it
// and its next hop. Stale paths kept through graceful restart are paths too.
type Path struct {
	Peer    netip.Addr
	NextHop netip.Addr
}

// BGPPaths are the paths the router's BGP table holds for prefix (exactly
// that prefix), from every speaker: what the kernel's route cannot show,
// since two paths with the same next hop make one kernel next hop.
func (n *routerNS) BGPPaths(prefix netip.Prefix) ([]Path, error) { return n.rt.paths(prefix) }

// parseFRRPaths reads `show bgp ... PREFIX json` ({} when there is none).
func parseFRRPaths(data []byte) ([]Path, error) {
	var doc struct {
		Paths []struct {
			Peer struct {
				PeerID string `json:"peerId"`
			} `json:"peer"`
			Nexthops []struct {
				IP string `json:"ip"`
			} `json:"nexthops"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("parse FRR paths: %w", err)
	}
	var out []Path
	for _, p := range doc.Paths {
		peer, err := netip.ParseAddr(p.Peer.PeerID)
		if err != nil || len(p.Nexthops) == 0 {
			return nil, fmt.Errorf("parse FRR paths: path from %q with next hops %v", p.Peer.PeerID, p.Nexthops)
		}
		nh, err := netip.ParseAddr(p.Nexthops[0].IP)
		if err != nil {
			return nil, fmt.Errorf("parse FRR paths: %w", err)
		}
		out = append(out, Path{Peer: peer, NextHop: nh})
	}
	return out, nil
}

// parseBirdPaths reads `birdc show route PREFIX all`: each route line names
// its protocol ("[spk4_0 ...]", the session with speaker 0 of IPv4, whose
// address peerAddr knows) and the next line its next hop ("via ADDR on DEV").
// Routes of other protocols (the kernel's) are skipped.
func parseBirdPaths(out string, peerAddr func(protocol string) (netip.Addr, bool)) ([]Path, error) {
	var paths []Path
	var peer netip.Addr
	for _, line := range strings.Split(out, "\n") {
		if i := strings.Index(line, "["); i >= 0 && strings.Contains(line, "unicast") {
			peer = netip.Addr{}
			if name, _, ok := strings.Cut(line[i+1:], " "); ok {
				if a, ok := peerAddr(name); ok {
					peer = a
				}
			}
			continue
		}
		fields := strings.Fields(line)
		if len(fields) >= 2 && fields[0] == "via" && peer.IsValid() {
			nh, err := netip.ParseAddr(fields[1])
			if err != nil {
				return nil, fmt.Errorf("parse BIRD paths: %q: %w", line, err)
			}
			paths = append(paths, Path{Peer: peer, NextHop: nh})
			peer = netip.Addr{}
		}
	}
	return paths, nil
}

// FRRRoute is one BGP path FRR holds for a prefix, with what it carries.
type FRRRoute struct {
	Peer netip.Addr
	// Communities and LargeCommunities are as FRR writes them
	// ("65000:300 no-export", "64512:9:9").
	Communities, LargeCommunities string
	// ExtendedCommunities are as FRR writes them: a link bandwidth one
	// is "LB:AS:bytes per second (N.NNN Mbps)".
	ExtendedCommunities string
	LocalPref           int
	NextHop             netip.Addr
}

// FRRRoutes are the paths FRR holds for exactly prefix, with their
// communities, local preference and next hop.
func (n *routerNS) FRRRoutes(prefix netip.Prefix) ([]FRRRoute, error) {
	out, err := n.frrPrefixJSON(prefix)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Paths []struct {
			Peer struct {
				PeerID string `json:"peerId"`
			} `json:"peer"`
			Community struct {
				String string `json:"string"`
			} `json:"community"`
			LargeCommunity struct {
				String string `json:"string"`
			} `json:"largeCommunity"`
			ExtendedCommunity struct {
				String string `json:"string"`
			} `json:"extendedCommunity"`
			LocPrf   int `json:"locPrf"`
			Nexthops []struct {
				IP string `json:"ip"`
			} `json:"nexthops"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		return nil, fmt.Errorf("parse FRR paths: %w", err)
	}
	var routes []FRRRoute
	for _, p := range doc.Paths {
		peer, _ := netip.ParseAddr(p.Peer.PeerID)
		r := FRRRoute{Peer: peer, Communities: p.Community.String, LargeCommunities: p.LargeCommunity.String,
			ExtendedCommunities: p.ExtendedCommunity.String, LocalPref: p.LocPrf}
		if len(p.Nexthops) > 0 {
			r.NextHop, _ = netip.ParseAddr(p.Nexthops[0].IP)
		}
		routes = append(routes, r)
	}
	return routes, nil
}

// frrPrefixJSON is FRR's JSON of the paths it holds for exactly prefix.
func (n *routerNS) frrPrefixJSON(prefix netip.Prefix) ([]byte, error) {
	afi := "ipv4"
	if prefix.Addr().Is6() {
		afi = "ipv6"
	}
	out, err := n.Vtysh(fmt.Sprintf("show bgp %s unicast %s json", afi, prefix))
	return []byte(out), err
}
