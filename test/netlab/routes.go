package netlab

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// Route is a route that the router (BIRD or FRR) installed in the router
// namespace's kernel.
type Route struct {
	Prefix netip.Prefix
	// NextHops are sorted; an ECMP route has several.
	NextHops []netip.Addr
	// Weights are the kernel's weight of each next hop, in the order of
	// NextHops: 1 each for equal-cost multipath and a single path, other
	// numbers for weighted ECMP (FRR with link bandwidth).
	Weights []int
}

// jsonRoute is one entry of `ip -j route show`: a single-path route has
// gateway, a multipath route has nexthops.
// An IPv4 route with an IPv6 next hop (RFC 8950, an unnumbered rack) has
// via instead of gateway.
type jsonRoute struct {
	Dst      string  `json:"dst"`
	Gateway  string  `json:"gateway"`
	Via      jsonVia `json:"via"`
	NextHops []struct {
		Gateway string  `json:"gateway"`
		Via     jsonVia `json:"via"`
		Weight  int     `json:"weight"`
	} `json:"nexthops"`
}

// jsonVia is the next hop of another family in `ip -j route show`.
type jsonVia struct {
	Host string `json:"host"`
}

// or is gw, else the via's host.
func (v jsonVia) or(gw string) string {
	if gw != "" {
		return gw
	}
	return v.Host
}

// Routes lists the routes of family f that the router's BGP daemon installed
// in the router namespace's kernel (proto bird, or proto bgp for FRR).
func (n *routerNS) Routes(f Family) ([]Route, error) {
	out, err := output("ip", fmt.Sprintf("-%d", f), "-n", n.ns, "-j", "route", "show", "proto", n.rt.routeProto())
	if err != nil {
		return nil, fmt.Errorf("netlab routes: %w", err)
	}
	return parseRoutes(f, []byte(out))
}

// parseRoutes reads the JSON of `ip -j route show`.
func parseRoutes(f Family, data []byte) ([]Route, error) {
	var raw []jsonRoute
	if len(strings.TrimSpace(string(data))) == 0 {
		return nil, nil
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("netlab parse routes: %w", err)
	}
	routes := make([]Route, 0, len(raw))
	for _, r := range raw {
		prefix, err := parseDst(f, r.Dst)
		if err != nil {
			return nil, err
		}
		type hop struct {
			gateway string
			weight  int
		}
		gateways := []hop{{r.Via.or(r.Gateway), 1}}
		if len(r.NextHops) > 0 {
			gateways = gateways[:0]
			for _, nh := range r.NextHops {
				gateways = append(gateways, hop{nh.Via.or(nh.Gateway), max(nh.Weight, 1)})
			}
		}
		type weighted struct {
			addr   netip.Addr
			weight int
		}
		var hops []weighted
		for _, g := range gateways {
			if g.gateway == "" {
				continue
			}
			a, err := netip.ParseAddr(g.gateway)
			if err != nil {
				return nil, fmt.Errorf("netlab parse routes: next hop of %s: %w", r.Dst, err)
			}
			hops = append(hops, weighted{a, g.weight})
		}
		slices.SortFunc(hops, func(a, b weighted) int { return a.addr.Compare(b.addr) })
		route := Route{Prefix: prefix}
		for _, h := range hops {
			route.NextHops = append(route.NextHops, h.addr)
			route.Weights = append(route.Weights, h.weight)
		}
		routes = append(routes, route)
	}
	return routes, nil
}

// parseDst reads a route destination: "default", a prefix, or a bare address
// (a host route).
func parseDst(f Family, dst string) (netip.Prefix, error) {
	switch {
	case dst == "default" && f == IPv6:
		return netip.MustParsePrefix("::/0"), nil
	case dst == "default":
		return netip.MustParsePrefix("0.0.0.0/0"), nil
	case strings.Contains(dst, "/"):
		p, err := netip.ParsePrefix(dst)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("netlab parse routes: %w", err)
		}
		return p, nil
	}
	a, err := netip.ParseAddr(dst)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("netlab parse routes: %w", err)
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// Route returns the router's route of prefix in the router's kernel, if any.
func (n *routerNS) Route(prefix netip.Prefix) (Route, bool, error) {
	f := IPv4
	if prefix.Addr().Is6() {
		f = IPv6
	}
	routes, err := n.Routes(f)
	if err != nil {
		return Route{}, false, err
	}
	for _, r := range routes {
		if r.Prefix == prefix.Masked() {
			return r, true, nil
		}
	}
	return Route{}, false, nil
}

// WaitRoute polls until the router's kernel route of prefix has exactly the
// wanted next hops (in any order); with none wanted, until there is no route.
func (n *routerNS) WaitRoute(ctx context.Context, prefix netip.Prefix, wantNextHops []netip.Addr) error {
	want := slices.Clone(wantNextHops)
	slices.SortFunc(want, netip.Addr.Compare)
	err := poll(ctx, func() (bool, string) {
		r, ok, err := n.Route(prefix)
		switch {
		case err != nil:
			return false, err.Error()
		case !ok:
			return len(want) == 0, "no route"
		default:
			return slices.Equal(r.NextHops, want), fmt.Sprintf("next hops %v", r.NextHops)
		}
	})
	if err != nil {
		return fmt.Errorf("netlab wait for route %s via %v: %w", prefix, want, err)
	}
	return nil
}
