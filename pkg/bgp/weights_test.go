package bgp

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/community"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// testWeightsFRR announces a prefix over both nodes of an FRR lab with the
// ready endpoints 3 and 1 (SetWeights), as ADD-PATH paths of one speaker:
// FRR reads each path's link bandwidth community as the speaker wrote it
// and installs the kernel route with next-hop weights 3:1; equal endpoints
// make equal weights, and without weights FRR installs plain ECMP. Two
// speakers (replicas) with the same weights still make 3:1.
func testWeightsFRR(t *testing.T, lab *netlab.Lab, s *Speaker) {
	ctx := t.Context()
	hops := lab.NodeAddrs(netlab.IPv4)
	p := netip.MustParsePrefix("198.18.43.3/32")
	asn := lab.Opts.SpeakerASN
	if err := s.SetWeights(ctx, p, map[netip.Addr]int{hops[0]: 3, hops[1]: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetPaths(ctx, p, hops); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		name      string
		endpoints map[netip.Addr]int // nil: no weights
		ratio     [2]int             // the kernel's weights of hops[0] and hops[1], reduced
	}{
		{"3 and 1", map[netip.Addr]int{hops[0]: 3, hops[1]: 1}, [2]int{3, 1}},
		{"2 and 2", map[netip.Addr]int{hops[0]: 2, hops[1]: 2}, [2]int{1, 1}},
		{"1 and 4", map[netip.Addr]int{hops[0]: 1, hops[1]: 4}, [2]int{1, 4}},
		{"none", nil, [2]int{1, 1}},
	} {
		if err := s.SetWeights(ctx, p, step.endpoints); err != nil {
			t.Fatal(err)
		}
		// FRR's reading of each path's community: what the speaker wrote,
		// with FRR's own rendering of its bandwidth (1 endpoint = 1 Mbit/s).
		want := map[netip.Addr]string{}
		for _, h := range hops {
			if n := step.endpoints[h]; n > 0 {
				want[h] = fmt.Sprintf("%s (%d.000 Mbps)", community.ForEndpoints(asn, n), n)
			} else {
				want[h] = ""
			}
		}
		var got map[netip.Addr]string
		var route netlab.Route
		deadline := time.Now().Add(waitTimeout)
		for {
			routes, err := lab.FRRRoutes(p)
			if err != nil {
				t.Fatal(err)
			}
			got = map[netip.Addr]string{}
			for _, r := range routes {
				got[r.NextHop] = r.ExtendedCommunities
			}
			r, ok, err := lab.Route(p)
			if err != nil {
				t.Fatal(err)
			}
			route = r
			if ok && fmt.Sprint(got) == fmt.Sprint(want) && slices.Equal(r.NextHops, hops) && reduced(r.Weights) == step.ratio {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: FRR has paths %v, kernel route %v weights %v; want %v, weights in ratio %v",
					step.name, got, route.NextHops, route.Weights, want, step.ratio)
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("%s: FRR reads %v, kernel weights %v", step.name, got, route.Weights)
	}

	// A second replica sends the same paths: FRR holds one per replica and
	// node, and still weighs the nodes 3:1.
	local := netlab.SpeakerAddr(netlab.IPv4, 1)
	s2 := runSpeaker(t, Config{ASN: asn, RouterID: local, Peers: []Peer{
		{Name: "edge", Address: netlab.RouterAddr(netlab.IPv4), ASN: lab.Opts.RouterASN, LocalAddress: local},
	}})
	for _, sp := range []*Speaker{s, s2} {
		if err := sp.SetWeights(ctx, p, map[netip.Addr]int{hops[0]: 3, hops[1]: 1}); err != nil {
			t.Fatal(err)
		}
		if err := sp.SetPaths(ctx, p, hops); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(waitTimeout); ; time.Sleep(100 * time.Millisecond) {
		paths, err := lab.BGPPaths(p)
		if err != nil {
			t.Fatal(err)
		}
		r, _, err := lab.Route(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(paths) == 4 && slices.Equal(r.NextHops, hops) && reduced(r.Weights) == [2]int{3, 1} {
			t.Logf("two replicas: %d paths, kernel weights %v", len(paths), r.Weights)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("two replicas: FRR has paths %v, kernel route %v weights %v; want 4 paths, weights 3:1", paths, r.NextHops, r.Weights)
		}
	}
}

// reduced is a pair of weights divided by their greatest common divisor
// (zero when there are not two).
func reduced(w []int) [2]int {
	if len(w) != 2 || w[0] <= 0 || w[1] <= 0 {
		return [2]int{}
	}
	a, b := w[0], w[1]
	for b != 0 {
		a, b = b, a%b
	}
	return [2]int{w[0] / a, w[1] / a}
}

func TestResend(t *testing.T) {
	a, b := netip.MustParseAddr("198.18.10.11"), netip.MustParseAddr("198.18.10.12")
	for _, tc := range []struct {
		name          string
		before, after map[netip.Addr]int
		want          bool // whether a's path goes out again
	}{
		{"first weights", nil, map[netip.Addr]int{a: 3, b: 1}, true},
		{"changed", map[netip.Addr]int{a: 3, b: 1}, map[netip.Addr]int{a: 2, b: 1}, true},
		{"unchanged", map[netip.Addr]int{a: 3, b: 1}, map[netip.Addr]int{a: 3, b: 2}, false},
		{"left out: leaving, withdrawn next", map[netip.Addr]int{a: 3, b: 1}, map[netip.Addr]int{b: 1}, false},
		{"no weights at all: sent without", map[netip.Addr]int{a: 3, b: 1}, nil, true},
		{"never had one", map[netip.Addr]int{b: 1}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := resend(tc.before, tc.after, a); got != tc.want {
				t.Errorf("resend = %v, want %v", got, tc.want)
			}
		})
	}
}
