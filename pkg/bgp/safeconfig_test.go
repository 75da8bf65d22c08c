package bgp

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// safePassword is the password of docs/loadbalancer.md's safe router
// configurations.
const safePassword = "change-me"

// TestSafeRouterConfigs loads the safe router configurations of
// docs/loadbalancer.md, as they stand, into the lab's BIRD and FRR, and
// runs a speaker with their password and TTL security (GTSM) against each:
// the router takes a pool address and a pod CIDR, and refuses an address
// outside the pools and a host route inside the pod range, which the
// speaker was made to send (the cluster itself would not).
func TestSafeRouterConfigs(t *testing.T) {
	for _, router := range netlab.RouterKinds {
		t.Run(string(router), func(t *testing.T) {
			var opts netlab.Options
			switch router {
			case netlab.RouterBIRD:
				block, err := netlab.DocBlock("loadbalancer.md", "<!-- safe:bird -->")
				if err != nil {
					t.Fatal(err)
				}
				opts = netlab.Options{BirdExtra: block, BirdTemplates: map[netlab.Family]string{netlab.IPv4: "cluster_v4", netlab.IPv6: "cluster_v6"}}
			case netlab.RouterFRR:
				if err := netlab.AvailableFRR(); err != nil {
					t.Skip(err)
				}
				block, err := netlab.DocBlock("loadbalancer.md", "<!-- safe:frr -->")
				if err != nil {
					t.Fatal(err)
				}
				opts = netlab.Options{FRRAfter: block}
			}
			opts.Nodes, opts.Speakers, opts.Router = 2, 1, router
			lab := netlab.New(t, opts)
			local := netlab.SpeakerAddr(netlab.IPv4, 0)
			s := runSpeaker(t, Config{ASN: lab.Opts.SpeakerASN, RouterID: local, Peers: []Peer{{
				Address: netlab.RouterAddr(netlab.IPv4), ASN: lab.Opts.RouterASN, LocalAddress: local,
				Password: safePassword, TTLSecurity: true,
			}}})
			ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
			defer cancel()
			hops := lab.NodeAddrs(netlab.IPv4)
			refused := []netip.Prefix{
				netip.MustParsePrefix("198.19.99.1/32"),  // in no pool
				netip.MustParsePrefix("198.18.130.7/32"), // a host route in the pod range
				netip.MustParsePrefix("198.18.40.0/23"),  // wider than the pool
				netip.MustParsePrefix("198.18.128.0/17"), // the pod range itself
			}
			taken := []netip.Prefix{
				netip.MustParsePrefix("198.18.40.7/32"),  // a pool address
				netip.MustParsePrefix("198.18.130.0/24"), // a pod CIDR
			}
			// The refused first: once the taken ones are in, the router
			// has had the refused ones too.
			for _, p := range append(refused, taken...) {
				if err := s.SetPaths(ctx, p, hops); err != nil {
					t.Fatal(err)
				}
			}
			for _, p := range taken {
				if err := lab.WaitRoute(ctx, p, hops); err != nil {
					t.Fatalf("%s: the router did not take it over a session with the password and TTL security: %v", p, err)
				}
			}
			time.Sleep(time.Second) // one more second for the refused ones to show, if the router took them
			for _, p := range refused {
				if r, ok, err := lab.Route(p); err != nil || ok {
					t.Errorf("%s: the router took it (%v, %v): the filter lets it through", p, r.NextHops, err)
				}
			}
		})
	}
}
