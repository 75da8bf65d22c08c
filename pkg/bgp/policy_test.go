package bgp

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/community"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// staticPolicy is one list of advertisements for every prefix.
type staticPolicy []Advertisement

func (p staticPolicy) Advertisements(netip.Prefix) []Advertisement { return p }

// TestPolicy runs a speaker with a policy against BIRD holding two router
// addresses, an eBGP "edge" and an iBGP "core", and checks what each gets:
// attributes per peer, the Services' communities on top (and changed), an
// aggregate instead of the host route at the edge and beside it at the
// core, following the host routes it covers.
func TestPolicy(t *testing.T) {
	lab := netlab.New(t, netlab.Options{Nodes: 2, Speakers: 1, SecondRouter: true})
	policy := staticPolicy{
		{Peers: []string{"edge"}, Attributes: Attributes{Communities: mustSet(t, "65000:100,no-export,64512:1:2")}, Aggregate4: 24, AggregateOnly: true},
		{Peers: []string{"core"}, Attributes: Attributes{Communities: mustSet(t, "65000:300"), LocalPref: 250}, Aggregate4: 24},
	}
	local := netlab.SpeakerAddr(netlab.IPv4, 0)
	s := runSpeaker(t, Config{ASN: lab.Opts.SpeakerASN, RouterID: local, Policy: policy, Peers: []Peer{
		{Name: "edge", Address: netlab.RouterAddr(netlab.IPv4), ASN: lab.Opts.RouterASN, LocalAddress: local},
		{Name: "core", Address: netlab.SecondRouterAddr(netlab.IPv4), Port: netlab.SecondRouterPort, ASN: lab.Opts.SpeakerASN, LocalAddress: local},
	}})
	ctx := t.Context()
	hops := lab.NodeAddrs(netlab.IPv4)
	vip, vip2 := netip.MustParsePrefix("198.18.42.7/32"), netip.MustParsePrefix("198.18.42.9/32")
	agg := netip.MustParsePrefix("198.18.42.0/24")
	edge, core := netlab.ProtocolName(netlab.IPv4, 0), netlab.SecondProtocolName(netlab.IPv4, 0)
	if err := s.SetPaths(ctx, vip, hops); err != nil {
		t.Fatal(err)
	}
	if err := s.SetPaths(ctx, vip2, hops[:1]); err != nil {
		t.Fatal(err)
	}
	if err := s.SetCommunities(ctx, vip, mustSet(t, "65000:200,64512:9:9")); err != nil {
		t.Fatal(err)
	}
	waitBird(t, lab, vip, map[string]string{
		core: "65000:200 65000:300 | 64512:9:9 | 250",
	}, hops)
	waitBird(t, lab, agg, map[string]string{
		edge: "65000:100 65535:65281 | 64512:1:2 | 100",
		core: "65000:300 |  | 250",
	}, hops)

	// The Services' communities change; the aggregate keeps its own.
	if err := s.SetCommunities(ctx, vip, community.Set{}); err != nil {
		t.Fatal(err)
	}
	waitBird(t, lab, vip, map[string]string{core: "65000:300 |  | 250"}, hops)
	// The aggregate follows the host routes it covers: one hop left, then none.
	if err := s.SetPaths(ctx, vip, nil); err != nil {
		t.Fatal(err)
	}
	waitBird(t, lab, agg, map[string]string{
		edge: "65000:100 65535:65281 | 64512:1:2 | 100",
		core: "65000:300 |  | 250",
	}, hops[:1])
	if err := s.SetPaths(ctx, vip2, nil); err != nil {
		t.Fatal(err)
	}
	waitBird(t, lab, agg, nil, nil)
}

// waitBird waits until BIRD holds for prefix one route per next hop from
// each protocol of want, carrying "communities | large | local_pref".
func waitBird(t *testing.T, lab *netlab.Lab, prefix netip.Prefix, want map[string]string, hops []netip.Addr) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		routes, err := lab.BirdRoutes(prefix, "")
		if err != nil {
			t.Fatal(err)
		}
		got := map[string][]netip.Addr{}
		ok := true
		var seen []string
		for _, r := range routes {
			a := strings.Join(r.Communities, " ") + " | " + strings.Join(r.LargeCommunities, " ") + " | " + strconv.Itoa(r.LocalPref)
			seen = append(seen, r.Protocol+" "+r.NextHop.String()+": "+a)
			if want[r.Protocol] != a {
				ok = false
			}
			got[r.Protocol] = append(got[r.Protocol], r.NextHop)
		}
		for proto := range want {
			g := got[proto]
			slices.SortFunc(g, netip.Addr.Compare)
			if !slices.Equal(g, hops) {
				ok = false
			}
		}
		if ok && len(got) == len(want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: BIRD has %q, want %v via %v", prefix, seen, want, hops)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestPolicyFRR sends FRR paths with communities and large communities
// through the import route map docs/loadbalancer.md gives for FRR: a path
// tagged 65000:300 gets local preference 300, the others keep FRR's. Then
// weighted ECMP in the same lab: paths with link bandwidth communities, as
// FRR reads them and weighs its kernel's next hops.
func TestPolicyFRR(t *testing.T) {
	if err := netlab.AvailableFRR(); err != nil {
		t.Skip(err)
	}
	filters, err := netlab.DocBlock("loadbalancer.md", "<!-- policy:frr -->")
	if err != nil {
		t.Fatal(err)
	}
	lab := netlab.New(t, netlab.Options{Nodes: 2, Speakers: 2, Router: netlab.RouterFRR, FRRExtra: filters, FRRImport: "FROM-CLUSTER"})
	tagged, other := netip.MustParsePrefix("198.18.43.1/32"), netip.MustParsePrefix("198.18.43.2/32")
	ads := staticPolicy{{Peers: []string{"edge"}, Attributes: Attributes{Communities: mustSet(t, "no-export")}}}
	local := netlab.SpeakerAddr(netlab.IPv4, 0)
	s := runSpeaker(t, Config{ASN: lab.Opts.SpeakerASN, RouterID: local, Policy: ads, Peers: []Peer{
		{Name: "edge", Address: netlab.RouterAddr(netlab.IPv4), ASN: lab.Opts.RouterASN, LocalAddress: local},
	}})
	ctx := t.Context()
	hops := lab.NodeAddrs(netlab.IPv4)[:1]
	for _, p := range []netip.Prefix{tagged, other} {
		if err := s.SetPaths(ctx, p, hops); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetCommunities(ctx, tagged, mustSet(t, "65000:300,64512:9:9")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		prefix             netip.Prefix
		communities, large string
		preferred          bool
	}{
		{tagged, "65000:300 no-export", "64512:9:9", true},
		{other, "no-export", "", false},
	} {
		deadline := time.Now().Add(waitTimeout)
		for {
			routes, err := lab.FRRRoutes(tc.prefix)
			if err != nil {
				t.Fatal(err)
			}
			if len(routes) == 1 && routes[0].Communities == tc.communities && routes[0].LargeCommunities == tc.large &&
				(routes[0].LocalPref == 300) == tc.preferred {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: FRR has %+v, want communities %q, large %q, local preference 300: %v", tc.prefix, routes, tc.communities, tc.large, tc.preferred)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	t.Run("weighted ECMP", func(t *testing.T) { testWeightsFRR(t, lab, s) })
}

func mustSet(t *testing.T, s string) community.Set {
	t.Helper()
	c, err := community.ParseList(s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
