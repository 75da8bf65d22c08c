package bgp

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// waitTimeout bounds every wait on the lab; it is no speed requirement.
const waitTimeout = 2 * time.Minute

var families = []netlab.Family{netlab.IPv4, netlab.IPv6}

// vipOf is the VIP the tests announce in family f.
func vipOf(f netlab.Family) netip.Prefix {
	if f == netlab.IPv6 {
		return netip.MustParsePrefix("2001:db8:30::1/128")
	}
	return netip.MustParsePrefix("198.18.30.1/32")
}

// startSpeaker runs a speaker from the host's speaker address idx, with one
// peer per family to the lab's router, until the test ends.
func startSpeaker(t *testing.T, lab *netlab.Lab, idx int, gr bool) *Speaker {
	t.Helper()
	cfg := Config{ASN: lab.Opts.SpeakerASN, RouterID: netlab.SpeakerAddr(netlab.IPv4, idx)}
	for _, f := range families {
		cfg.Peers = append(cfg.Peers, Peer{
			Address:         netlab.RouterAddr(f),
			ASN:             lab.Opts.RouterASN,
			LocalAddress:    netlab.SpeakerAddr(f, idx),
			Password:        lab.Opts.Password,
			GracefulRestart: gr,
		})
	}
	return runSpeaker(t, cfg)
}

// runSpeaker starts a speaker with cfg until the test ends.
func runSpeaker(t *testing.T, cfg Config) *Speaker {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- s.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		s.Stop()
		if err := <-errc; err != nil {
			t.Errorf("speaker %s: Start: %v", cfg.RouterID, err)
		}
	})
	return s
}

// waitCtx is a context for waits on the lab.
func waitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

// serveVIP puts the VIPs on every node's lo and serves HTTP there.
func serveVIP(t *testing.T, lab *netlab.Lab) {
	t.Helper()
	for i := range lab.Nodes {
		for _, f := range families {
			if err := lab.AddLoopbackVIP(i, vipOf(f).Addr()); err != nil {
				t.Fatal(err)
			}
		}
		if err := lab.ServeHTTP(i, ":80"); err != nil {
			t.Fatal(err)
		}
	}
}

// checkServedBy GETs the VIP from the client a few times and checks that only
// the given nodes answer.
func checkServedBy(t *testing.T, lab *netlab.Lab, f netlab.Family, nodes ...int) {
	t.Helper()
	allowed := map[string]bool{}
	for _, i := range nodes {
		allowed[lab.NodeName(i)] = true
	}
	url := fmt.Sprintf("http://%s/", netip.AddrPortFrom(vipOf(f).Addr(), 80))
	for range 10 {
		body, err := lab.ClientGet(waitCtx(t), url)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		if !allowed[body] {
			t.Fatalf("GET %s answered by %q, want one of %v", url, body, nodes)
		}
	}
}

// TestECMP announces a VIP with three next hops, narrows it to two and
// withdraws it, per family, and checks the router's kernel route and the
// data plane from the client at each step.
func TestECMP(t *testing.T) {
	lab := netlab.New(t, netlab.Options{Nodes: 3})
	serveVIP(t, lab)
	s := startSpeaker(t, lab, 0, false)
	ctx := waitCtx(t)
	if err := lab.WaitEstablished(ctx, netlab.SpeakerAddr(netlab.IPv4, 0), netlab.SpeakerAddr(netlab.IPv6, 0)); err != nil {
		t.Fatal(err)
	}
	for _, st := range s.PeerStates() {
		if st.State != "established" {
			t.Errorf("speaker's view of %s: %q", st.Address, st.State)
		}
	}

	for _, f := range families {
		t.Run(fmt.Sprintf("IPv%d", f), func(t *testing.T) {
			vip, nodes := vipOf(f), lab.NodeAddrs(f)
			// (a) three next hops → one ECMP route with three next hops.
			if err := s.SetPaths(ctx, vip, nodes); err != nil {
				t.Fatal(err)
			}
			if err := lab.WaitRoute(ctx, vip, nodes); err != nil {
				t.Fatal(err)
			}
			checkServedBy(t, lab, f, 0, 1, 2)
			if got := s.Prefixes()[vip]; !slices.Equal(got, nodes) {
				t.Errorf("Prefixes()[%s] = %v, want %v", vip, got, nodes)
			}
			// The other family's table does not get this prefix.
			other := netlab.IPv4
			if f == netlab.IPv4 {
				other = netlab.IPv6
			}
			routes, err := lab.Routes(other)
			if err != nil {
				t.Fatal(err)
			}
			if len(routes) != 0 {
				t.Errorf("IPv%d routes while only IPv%d is announced: %v", other, f, routes)
			}

			// (b) two next hops narrow the route.
			if err := s.SetPaths(ctx, vip, []netip.Addr{nodes[2], nodes[0]}); err != nil {
				t.Fatal(err)
			}
			if err := lab.WaitRoute(ctx, vip, []netip.Addr{nodes[0], nodes[2]}); err != nil {
				t.Fatal(err)
			}
			checkServedBy(t, lab, f, 0, 2)

			// (c) an empty set withdraws it.
			if err := s.SetPaths(ctx, vip, nil); err != nil {
				t.Fatal(err)
			}
			if err := lab.WaitRoute(ctx, vip, nil); err != nil {
				t.Fatal(err)
			}
			if got := s.Prefixes(); len(got) != 0 {
				t.Errorf("Prefixes after withdrawal = %v", got)
			}
		})
	}
}

// TestTwoSpeakers has two speakers, from two source addresses, announce the
// same paths; when one stops, the router keeps the route through the other.
func TestTwoSpeakers(t *testing.T) {
	lab := netlab.New(t, netlab.Options{Nodes: 3, Speakers: 2})
	a, b := startSpeaker(t, lab, 0, true), startSpeaker(t, lab, 1, true)
	ctx := waitCtx(t)
	var all []netip.Addr
	for _, f := range families {
		all = append(all, lab.SpeakerAddrs(f)...)
	}
	if err := lab.WaitEstablished(ctx, all...); err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, s := range []*Speaker{a, b} {
			if err := s.SetPaths(ctx, vipOf(f), lab.NodeAddrs(f)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, f := range families {
		// The router has the paths of both sessions.
		if err := waitBirdPaths(ctx, lab, vipOf(f), []string{fmt.Sprintf("spk%d_0", f), fmt.Sprintf("spk%d_1", f)}); err != nil {
			t.Fatal(err)
		}
		if err := lab.WaitRoute(ctx, vipOf(f), lab.NodeAddrs(f)); err != nil {
			t.Fatal(err)
		}
	}

	a.Stop()
	for _, f := range families {
		// Once the router has dropped speaker a's paths...
		if err := waitBirdPaths(ctx, lab, vipOf(f), []string{fmt.Sprintf("spk%d_1", f)}); err != nil {
			t.Fatal(err)
		}
		// ...the kernel route still has all three next hops.
		r, ok, err := lab.Route(vipOf(f))
		if err != nil {
			t.Fatal(err)
		}
		if !ok || !slices.Equal(r.NextHops, lab.NodeAddrs(f)) {
			t.Errorf("after one speaker stopped: route %v (present %v), want next hops %v", r, ok, lab.NodeAddrs(f))
		}
	}
	states, err := lab.SessionStates()
	if err != nil {
		t.Fatal(err)
	}
	if st := states[netlab.SpeakerAddr(netlab.IPv4, 0)]; st == "Established" {
		t.Errorf("router's session with the stopped speaker is still %s", st)
	}
}

// waitBirdPaths polls BIRD's table until the paths of prefix come from
// exactly the given BGP protocols.
func waitBirdPaths(ctx context.Context, lab *netlab.Lab, prefix netip.Prefix, protocols []string) error {
	var last string
	for {
		out, err := lab.Birdc("show", "route", "for", prefix.String())
		last = out
		if err == nil && protocolsOf(out) == strings.Join(protocols, ",") {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("BIRD paths of %s from %v: %w; last:\n%s", prefix, protocols, ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// protocolsOf lists, sorted and unique, the protocols named in the output of
// `birdc show route` ("... [spk4_0 12:00:00.000] * (100) ...").
func protocolsOf(out string) string {
	var names []string
	for _, line := range strings.Split(out, "\n") {
		_, rest, ok := strings.Cut(line, "[")
		if !ok {
			continue
		}
		if name, _, ok := strings.Cut(rest, " "); ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return strings.Join(slices.Compact(names), ",")
}

// TestPassword peers with TCP MD5 signatures.
func TestPassword(t *testing.T) {
	lab := netlab.New(t, netlab.Options{Nodes: 1, Speakers: 1, Password: "lab-s3cret"})
	s := startSpeaker(t, lab, 0, false)
	ctx := waitCtx(t)
	if err := lab.WaitEstablished(ctx, netlab.SpeakerAddr(netlab.IPv4, 0), netlab.SpeakerAddr(netlab.IPv6, 0)); err != nil {
		t.Fatal(err)
	}
	vip := vipOf(netlab.IPv4)
	if err := s.SetPaths(ctx, vip, lab.NodeAddrs(netlab.IPv4)); err != nil {
		t.Fatal(err)
	}
	if err := lab.WaitRoute(ctx, vip, lab.NodeAddrs(netlab.IPv4)); err != nil {
		t.Fatal(err)
	}
}
