package netlab

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func addrs(s ...string) []netip.Addr {
	out := make([]netip.Addr, len(s))
	for i, a := range s {
		out[i] = netip.MustParseAddr(a)
	}
	return out
}

func TestParseRoutes(t *testing.T) {
	v4 := `[{"dst":"198.18.30.1","gateway":"198.18.10.12","dev":"br0","protocol":"bird","metric":32,"flags":[]},
	{"dst":"198.18.31.0/24","protocol":"bird","metric":32,"flags":[],"nexthops":[{"gateway":"198.18.10.13","dev":"br0","weight":1,"flags":[]},{"gateway":"198.18.10.11","dev":"br0","weight":1,"flags":[]}]},
	{"dst":"default","gateway":"198.18.10.1","dev":"br0","protocol":"bird","flags":[]}]`
	got, err := parseRoutes(IPv4, []byte(v4))
	if err != nil {
		t.Fatal(err)
	}
	want := []Route{
		{Prefix: netip.MustParsePrefix("198.18.30.1/32"), NextHops: addrs("198.18.10.12"), Weights: []int{1}},
		{Prefix: netip.MustParsePrefix("198.18.31.0/24"), NextHops: addrs("198.18.10.11", "198.18.10.13"), Weights: []int{1, 1}},
		{Prefix: netip.MustParsePrefix("0.0.0.0/0"), NextHops: addrs("198.18.10.1"), Weights: []int{1}},
	}
	if !slices.EqualFunc(got, want, routeEqual) {
		t.Errorf("IPv4 routes = %v, want %v", got, want)
	}

	v6 := `[{"dst":"2001:db8:30::1","protocol":"bird","metric":32,"flags":[],"pref":"medium","nexthops":[{"gateway":"2001:db8:10::11","dev":"br0","weight":1,"flags":[]},{"gateway":"2001:db8:10::12","dev":"br0","weight":1,"flags":[]}]}]`
	got, err = parseRoutes(IPv6, []byte(v6))
	if err != nil {
		t.Fatal(err)
	}
	want = []Route{{Prefix: netip.MustParsePrefix("2001:db8:30::1/128"), NextHops: addrs("2001:db8:10::11", "2001:db8:10::12"), Weights: []int{1, 1}}}
	if !slices.EqualFunc(got, want, routeEqual) {
		t.Errorf("IPv6 routes = %v, want %v", got, want)
	}

	// FRR with link bandwidth: weighted next hops, as zebra installs them
	// (with a nexthop group), each weight kept with its next hop.
	frr := `[{"dst":"198.18.43.1","nhid":12,"metric":20,"flags":[],"nexthops":[{"gateway":"198.18.10.12","dev":"br0","weight":25,"flags":[]},{"gateway":"198.18.10.11","dev":"br0","weight":75,"flags":[]}]}]`
	got, err = parseRoutes(IPv4, []byte(frr))
	if err != nil {
		t.Fatal(err)
	}
	want = []Route{{Prefix: netip.MustParsePrefix("198.18.43.1/32"), NextHops: addrs("198.18.10.11", "198.18.10.12"), Weights: []int{75, 25}}}
	if !slices.EqualFunc(got, want, routeEqual) {
		t.Errorf("weighted routes = %v, want %v", got, want)
	}

	// An unnumbered rack: IPv4 through IPv6 link-local next hops (RFC
	// 8950), as zebra installs them.
	viaV6 := `[{"dst":"198.18.172.238","nhid":18,"metric":20,"flags":[],"nexthops":[{"via":{"family":"inet6","host":"fe80::12"},"dev":"n1","weight":1,"flags":[]},{"via":{"family":"inet6","host":"fe80::11"},"dev":"n0","weight":1,"flags":[]}]},
	{"dst":"198.18.172.239","via":{"family":"inet6","host":"fe80::11"},"dev":"n0","flags":[]}]`
	got, err = parseRoutes(IPv4, []byte(viaV6))
	if err != nil {
		t.Fatal(err)
	}
	want = []Route{{Prefix: netip.MustParsePrefix("198.18.172.238/32"), NextHops: addrs("fe80::11", "fe80::12"), Weights: []int{1, 1}},
		{Prefix: netip.MustParsePrefix("198.18.172.239/32"), NextHops: addrs("fe80::11"), Weights: []int{1}}}
	if !slices.EqualFunc(got, want, routeEqual) {
		t.Errorf("routes through IPv6 next hops = %v, want %v", got, want)
	}

	if got, err := parseRoutes(IPv4, []byte("[]\n")); err != nil || len(got) != 0 {
		t.Errorf("empty list = %v, %v", got, err)
	}
	if _, err := parseRoutes(IPv4, []byte(`[{"dst":"nonsense"}]`)); err == nil {
		t.Error("bad destination: no error")
	}
}

func routeEqual(a, b Route) bool {
	return a.Prefix == b.Prefix && slices.Equal(a.NextHops, b.NextHops) && slices.Equal(a.Weights, b.Weights)
}

func TestAddressPlan(t *testing.T) {
	for _, a := range []netip.Addr{
		RouterAddr(IPv4), RouterAddr(IPv6), SpeakerAddr(IPv4, 7), SpeakerAddr(IPv6, 0),
		NodeAddr(IPv4, 0), NodeAddr(IPv6, 2), ClientAddr(IPv4), ClientAddr(IPv6), ClientGateway(IPv6),
	} {
		if err := checkAddr(a); err != nil {
			t.Error(err)
		}
	}
	if got := NodeAddr(IPv4, 0).String(); got != "198.18.10.11" {
		t.Errorf("node 0 = %s", got)
	}
	if got := SpeakerAddr(IPv6, 1).String(); got != "2001:db8:10::3" {
		t.Errorf("speaker 1 = %s", got)
	}
	if err := checkAddr(netip.MustParseAddr("10.0.0.1")); err == nil {
		t.Error("10.0.0.1 accepted")
	}
	cfg := (&Lab{Opts: Options{Speakers: 1, RouterASN: 1, SpeakerASN: 2, Password: "s3cret"}}).birdConfig()
	for _, want := range []string{"neighbor 198.18.10.2 as 2;", "neighbor 2001:db8:10::2 as 2;", `password "s3cret";`, "add paths rx;", "merge paths on;"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("bird config lacks %q:\n%s", want, cfg)
		}
	}
}

// TestNodePeers checks the sessions with node addresses (Options.NodePeers):
// their validation, both routers' configs and the names BIRD reports them by.
func TestNodePeers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		peers []int
		ok    bool
	}{
		{"none", nil, true},
		{"two", []int{0, 2}, true},
		{"negative", []int{-1}, false},
		{"past the last node", []int{3}, false},
		{"twice", []int{1, 1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Options{Nodes: 3, NodePeers: tc.peers}
			if err := o.defaults(); (err == nil) != tc.ok {
				t.Errorf("defaults() = %v, want ok %v", err, tc.ok)
			}
		})
	}

	o := Options{Speakers: 1, NodePeers: []int{1}, Password: "s3cret"}
	if err := o.defaults(); err != nil {
		t.Fatal(err)
	}
	l := &Lab{Opts: o}
	bird := l.birdConfig()
	for _, want := range []string{
		"protocol bgp node4_1 {\n", "neighbor 198.18.10.12 as 64512;", "protocol bgp node6_1 {\n",
		"neighbor 2001:db8:10::12 as 64512;", "neighbor 198.18.10.2 as 64512;",
	} {
		if !strings.Contains(bird, want) {
			t.Errorf("bird config lacks %q:\n%s", want, bird)
		}
	}
	if got := strings.Count(bird, `password "s3cret";`); got != 4 {
		t.Errorf("bird config has %d passwords, want 4 (2 speaker and 2 node sessions):\n%s", got, bird)
	}
	for name, want := range map[string]string{"node4_1": "198.18.10.12", "node6_1": "2001:db8:10::12", "spk6_0": "2001:db8:10::2"} {
		if a, ok := o.peerAddr(name); !ok || a.String() != want {
			t.Errorf("peerAddr(%s) = %v, %v; want %s", name, a, ok, want)
		}
	}
	if a, ok := o.peerAddr("node4_0"); ok {
		t.Errorf("peerAddr(node4_0) = %v: node 0 has no session", a)
	}
	paths, err := parseBirdPaths("198.18.110.1/32 unicast [node4_1 12:00:00.000] * (100) [AS64512i]\n\tvia 198.18.10.13 on br0\n", o.peerAddr)
	if err != nil || len(paths) != 1 || paths[0].Peer.String() != "198.18.10.12" || paths[0].NextHop.String() != "198.18.10.13" {
		t.Errorf("BIRD path from a node session = %v, %v", paths, err)
	}

	l.Opts.Router = RouterFRR
	frr, err := l.frrConfig()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"neighbor 198.18.10.12 peer-group CCM\n", "neighbor 2001:db8:10::12 peer-group CCM6\n",
		"neighbor 198.18.10.12 password s3cret\n", "neighbor 198.18.10.2 peer-group CCM\n",
	} {
		if !strings.Contains(frr, want) {
			t.Errorf("FRR config lacks %q:\n%s", want, frr)
		}
	}
	frrDryRun(t, frr)
}

// TestLab builds a lab per router and checks its data plane, its host
// attachment, a router restart and that Close leaves nothing behind.
func TestLab(t *testing.T) {
	for _, kind := range RouterKinds {
		t.Run(string(kind), func(t *testing.T) { testLab(t, kind) })
	}
}

func testLab(t *testing.T, kind RouterKind) {
	l := New(t, Options{Nodes: 2, Speakers: 2, NodePeers: []int{1}, Router: kind})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// Client → router → node, both families, through sockets made in the
	// namespaces.
	for i := range l.Nodes {
		if err := l.ServeHTTP(i, ":8080"); err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range []string{"http://198.18.10.12:8080/", "http://[2001:db8:10::12]:8080/"} {
		if body, err := l.ClientGet(ctx, u); err != nil || body != "node1" {
			t.Errorf("GET %s = %q, %v; want node1", u, body, err)
		}
	}

	// A VIP on a node's lo, routed by hand (not as the router's protocol:
	// BIRD would remove a foreign route marked as its own).
	for _, f := range []Family{IPv4, IPv6} {
		vip := netip.MustParseAddr("198.18.30.1")
		if f == IPv6 {
			vip = netip.MustParseAddr("2001:db8:30::1")
		}
		if err := l.AddLoopbackVIP(0, vip); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Exec(l.Router, "ip", "route", "add", vip.String(), "via", NodeAddr(f, 0).String()); err != nil {
			t.Fatal(err)
		}
		u := "http://" + netip.AddrPortFrom(vip, 8080).String() + "/"
		if body, err := l.ClientGet(ctx, u); err != nil || body != "node0" {
			t.Errorf("GET %s = %q, %v; want node0", u, body, err)
		}
	}
	if _, err := l.ClientGet(ctx, "http://10.1.2.3/"); err == nil {
		t.Error("GET outside the lab ranges: no error")
	}

	// The host end has only the segment's routes, and reaches the router
	// from each speaker address.
	for _, f := range []string{"-4", "-6"} {
		out, err := output("ip", f, "route", "show", "dev", l.HostLink)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if !strings.HasPrefix(line, "198.18.10.0/24 ") && !strings.HasPrefix(line, "2001:db8:10::/64 ") {
				t.Errorf("unexpected host route %q", line)
			}
		}
	}
	for _, f := range []Family{IPv4, IPv6} {
		d := net.Dialer{LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(SpeakerAddr(f, 1), 0)), Timeout: 5 * time.Second}
		conn, err := d.DialContext(ctx, "tcp", netip.AddrPortFrom(RouterAddr(f), 179).String())
		if err != nil {
			t.Errorf("host → router: %v", err)
			continue
		}
		_ = conn.Close()
	}
	states, err := l.SessionStates()
	if err != nil {
		t.Fatal(err)
	}
	if len(states) != 6 {
		t.Errorf("session states = %v, want 6 sessions (2 speakers and node 1, both families)", states)
	}
	for _, a := range []netip.Addr{NodeAddr(IPv4, 1), NodeAddr(IPv6, 1)} {
		if _, ok := states[a]; !ok {
			t.Errorf("session states = %v: none with node address %s", states, a)
		}
	}

	pid := l.RouterPID()
	if err := l.RestartRouter(); err != nil {
		t.Fatal(err)
	}
	if l.RouterPID() == pid || processAlive(pid) {
		t.Errorf("%s pid %d still running after restart (new pid %d)", kind, pid, l.RouterPID())
	}
	if kind == RouterFRR {
		_, err = l.Vtysh("show version")
	} else {
		_, err = l.Birdc("show", "status")
	}
	if err != nil {
		t.Errorf("%s's control socket after restart: %v", kind, err)
	}

	pid, dir := l.RouterPID(), l.Dir
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if processAlive(pid) {
		t.Errorf("%s pid %d alive after Close", kind, pid)
	}
	for _, ns := range append([]string{l.Router, l.Client}, l.Nodes...) {
		if _, err := os.Stat(filepath.Join("/run/netns", ns)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("namespace %s left: %v", ns, err)
		}
	}
	if _, err := net.InterfaceByName(l.HostLink); err == nil {
		t.Errorf("host link %s left", l.HostLink)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dir %s left: %v", dir, err)
	}
}

func processAlive(pid int) bool {
	return pid > 0 && syscall.Kill(pid, 0) == nil
}
