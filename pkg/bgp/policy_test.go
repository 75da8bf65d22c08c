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
	must := func(s string) community.Set {
		c, err := community.ParseList(s)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	policy := staticPolicy{
		{Peers: []string{"edge"}, Attributes: Attributes{Communities: must("65000:100,no-export,64512:1:2")}, Aggregate4: 24, AggregateOnly: true},
		{Peers: []string{"core"}, Attributes: Attributes{Communities: must("65000:300"), LocalPref: 250}, Aggregate4: 24},
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
	if err := s.SetCommunities(ctx, vip, must("65000:200,64512:9:9")); err != nil {
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
