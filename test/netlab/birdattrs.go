package netlab

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// BirdRoute is one BGP route BIRD holds for a prefix: the session it came
// from and what it carries.
type BirdRoute struct {
	// Protocol is BIRD's protocol of the session (protocolName,
	// SecondProtocolName).
	Protocol string
	NextHop  netip.Addr
	// Communities are written "AS:value" (well-known ones by number, as
	// BIRD shows them), LargeCommunities "global:local1:local2".
	Communities, LargeCommunities []string
	// ExtCommunities are BIRD's tuples joined by ':' ("rt:65000:1"); one
	// of a type it has no name for is "unknown 0xTYPE:AS:value" (a link
	// bandwidth community, which BIRD keeps but does not use).
	ExtCommunities []string
	// LocalPref is 0 when the route has none.
	LocalPref int
}

// BirdRoutes are the BGP routes BIRD holds for exactly prefix, from every
// session, with their attributes (`birdc show route PREFIX all`); with a
// filter (Options.BirdExtra), those it accepts, as it changed them.
func (n *routerNS) BirdRoutes(prefix netip.Prefix, filter string) ([]BirdRoute, error) {
	args := []string{"show", "route", prefix.String(), "all"}
	if filter != "" {
		args = append(args, "filter", filter)
	}
	out, err := n.Birdc(args...)
	if err != nil {
		if strings.Contains(out, "Network not found") {
			return nil, nil
		}
		return nil, fmt.Errorf("%w: %s", err, out)
	}
	return parseBirdRoutes(out)
}

// parseBirdRoutes reads `birdc show route PREFIX all`: a route starts with
// a line naming its protocol ("unicast [spk4_0 ..."), its attributes
// follow, one a line; routes of other protocols than BGP sessions (the
// kernel's) have no BGP attributes and are skipped.
func parseBirdRoutes(out string) ([]BirdRoute, error) {
	var routes []BirdRoute
	var cur *BirdRoute
	for _, line := range strings.Split(out, "\n") {
		if i := strings.Index(line, "["); i >= 0 && strings.Contains(line, "unicast") {
			name, _, _ := strings.Cut(line[i+1:], " ")
			routes = append(routes, BirdRoute{Protocol: name})
			cur = &routes[len(routes)-1]
			continue
		}
		if cur == nil {
			continue
		}
		key, val, ok := strings.Cut(strings.TrimSpace(line), ":")
		val = strings.TrimSpace(val)
		switch {
		case strings.HasPrefix(strings.TrimSpace(line), "via "):
			nh, err := netip.ParseAddr(strings.Fields(line)[1])
			if err != nil {
				return nil, fmt.Errorf("parse BIRD route: %q: %w", line, err)
			}
			cur.NextHop = nh
		case !ok:
		case key == "BGP.community":
			cur.Communities = birdTuples(val)
		case key == "BGP.large_community":
			cur.LargeCommunities = birdTuples(val)
		case key == "BGP.ext_community":
			cur.ExtCommunities = birdTuples(val)
		case key == "BGP.local_pref":
			n, err := strconv.Atoi(val)
			if err != nil {
				return nil, fmt.Errorf("parse BIRD route: %q: %w", line, err)
			}
			cur.LocalPref = n
		}
	}
	var bgp []BirdRoute
	for _, r := range routes {
		if r.NextHop.IsValid() && r.Protocol != "" && !strings.HasPrefix(r.Protocol, "kernel") {
			bgp = append(bgp, r)
		}
	}
	return bgp, nil
}

// birdTuples reads BIRD's "(65000,100) (64512, 1, 2)" as "65000:100",
// "64512:1:2".
func birdTuples(val string) []string {
	var out []string
	for _, t := range strings.Split(val, ")") {
		t = strings.Trim(strings.TrimSpace(t), "(")
		if t == "" {
			continue
		}
		parts := strings.Split(t, ",")
		for i := range parts {
			parts[i] = strings.TrimSpace(parts[i])
		}
		out = append(out, strings.Join(parts, ":"))
	}
	return out
}
