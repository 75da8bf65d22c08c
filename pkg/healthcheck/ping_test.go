package healthcheck_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/metal-ccm/metal-ccm/pkg/healthcheck"
	"github.com/metal-ccm/metal-ccm/test/framework"
)

// pingNS makes a network namespace whose loopback holds the addresses of
// a /24 and a /64, with unprivileged ICMP echo sockets allowed (as a
// replica's host allows them), and a route to a prefix that nobody holds
// (a link to nobody: neighbour discovery fails, what is sent there is lost) and one to a blackhole (what
// is sent there is refused). It is deleted by name when the test ends. It
// skips without root or ip.
func pingNS(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a network namespace")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs ip (iproute2)")
	}
	ns := fmt.Sprintf("hcping-%d", os.Getpid())
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil { //nolint:gosec // ip with the test's arguments
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	run("netns", "add", ns)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() }) //nolint:gosec // the test's own namespace
	run("netns", "exec", ns, "sysctl", "-qw", "net.ipv4.ping_group_range=0 2147483647")
	run("-n", ns, "link", "set", "lo", "up")
	run("-n", ns, "addr", "add", "198.18.130.0/24", "dev", "lo")
	// The whole /64 is local (IPv4 makes a loopback's prefix local, IPv6
	// only its address).
	run("-n", ns, "-6", "route", "add", "local", "2001:db8:130::/64", "dev", "lo")
	run("-n", ns, "link", "add", "lost", "type", "veth", "peer", "name", "lostpeer")
	run("-n", ns, "link", "set", "lost", "up")
	run("-n", ns, "link", "set", "lostpeer", "up")
	run("-n", ns, "route", "add", "198.18.131.0/24", "dev", "lost")
	run("-n", ns, "route", "add", "2001:db8:131::/64", "dev", "lost")
	run("-n", ns, "route", "add", "blackhole", "198.18.132.0/24")
	return ns
}

// TestPing pings, from one pinger, hundreds of addresses of both families
// that answer (more than a socket's receive buffer holds at once), some
// that are lost, some the kernel refuses to send to, and one twice.
func TestPing(t *testing.T) {
	ns := pingNS(t)
	var p healthcheck.Pinger
	if err := framework.RunInNetNS(ns, func() error {
		for _, v6 := range []bool{false, true} {
			if err := p.Open(v6); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)

	var addrs []netip.Addr
	var want []bool
	add := func(s string, replies bool) {
		addrs = append(addrs, netip.MustParseAddr(s))
		want = append(want, replies)
	}
	for i := 1; i <= 250; i++ {
		add(fmt.Sprintf("198.18.130.%d", i), true)
	}
	for i := 1; i <= 250; i++ {
		add(fmt.Sprintf("2001:db8:130::%x", i), true)
	}
	add("198.18.131.7", false)
	add("2001:db8:131::7", false)
	add("198.18.132.7", false)
	add("198.18.130.9", true) // a second target of the same node
	add("::ffff:198.18.130.10", true)

	for round := range 3 {
		start := time.Now()
		got, err := p.Ping(addrs, start.Add(300*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		for i, a := range addrs {
			if got[i] != want[i] {
				t.Errorf("round %d: %s replied: %t, want %t", round, a, got[i], want[i])
			}
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("round %d took %s: the deadline (300 ms) does not bound it", round, took)
		}
	}
	// Every address answers: the round ends before the deadline, with the
	// replies of the earlier rounds' lost requests not counted.
	start := time.Now()
	got, err := p.Ping(addrs[:500], start.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	for i, ok := range got {
		if !ok {
			t.Errorf("%s: no reply", addrs[i])
		}
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("a round whose addresses all answer took %s: it waited for the deadline", took)
	}
}

// TestPingUnavailable: where the process's group may not open ping
// sockets (a namespace's default), opening one says ErrPingUnavailable.
func TestPingUnavailable(t *testing.T) {
	ns := pingNS(t)
	if out, err := exec.Command("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv4.ping_group_range=1 0").CombinedOutput(); err != nil { //nolint:gosec // the test's own namespace
		t.Fatalf("sysctl: %v: %s", err, out)
	}
	err := framework.RunInNetNS(ns, healthcheck.PingAvailable)
	if !errors.Is(err, healthcheck.ErrPingUnavailable) {
		t.Fatalf("PingAvailable() = %v, want ErrPingUnavailable", err)
	}
}

// inNetNSEnv names the namespace a test binary was started in by
// TestCheckerPings, which runs its body there.
const inNetNSEnv = "HEALTHCHECK_TEST_NETNS"

// TestCheckerPings runs a Checker with pings on, in a namespace of its own
// (the test binary started again inside it: a Checker's goroutines open
// their sockets where they run), against two nodes whose kube-proxy
// answers and one that is gone: the live ones are checked by HTTP, then
// pinged between; the gone one is Unhealthy. Then one live node goes (its
// address removed): it is withdrawn, after a ping that failed.
func TestCheckerPings(t *testing.T) {
	if ns := os.Getenv(inNetNSEnv); ns != "" {
		checkerPingsInNetNS(t, ns)
		return
	}
	ns := pingNS(t)
	cmd := exec.Command("ip", "netns", "exec", ns, os.Args[0], "-test.run=^TestCheckerPings$", "-test.v", "-test.count=1") //nolint:gosec // this test binary, in the test's namespace
	cmd.Env = append(os.Environ(), inNetNSEnv+"="+ns)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestCheckerPings") {
		t.Fatalf("in namespace %s: %v\n%s", ns, err, out)
	}
	t.Logf("in namespace %s:\n%s", ns, out)
}

// pingCounter counts pings and HTTP checks by target and result.
type pingCounter struct {
	mu            sync.Mutex
	pings, checks map[netip.AddrPort][2]int // [failed, passed]
}

func (p *pingCounter) count(m map[netip.AddrPort][2]int, a netip.AddrPort, passed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := m[a]
	if passed {
		n[1]++
	} else {
		n[0]++
	}
	m[a] = n
}

func (p *pingCounter) Pinged(a netip.AddrPort, passed bool) {
	p.count(p.pings, a, passed)
}

func (p *pingCounter) Checked(a netip.AddrPort, passed bool, _ time.Duration) {
	p.count(p.checks, a, passed)
}

func (p *pingCounter) Changed(netip.AddrPort, healthcheck.State, healthcheck.State) {}

func (p *pingCounter) get(m map[netip.AddrPort][2]int, a netip.AddrPort) [2]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return m[a]
}

func checkerPingsInNetNS(t *testing.T, ns string) {
	for _, a := range []string{"198.18.133.1/32", "198.18.133.2/32"} {
		if out, err := exec.Command("ip", "addr", "add", a, "dev", "lo").CombinedOutput(); err != nil { //nolint:gosec // the test's namespace
			t.Fatalf("ip addr add %s: %v: %s", a, err, out)
		}
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"lastUpdated": "now"}`))
	})}
	ln, err := net.Listen("tcp", "0.0.0.0:10256") //nolint:gosec // in the test's own namespace, for both its addresses
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	live1, live2 := netip.MustParseAddrPort("198.18.133.1:10256"), netip.MustParseAddrPort("198.18.133.2:10256")
	gone := netip.MustParseAddrPort("198.18.131.7:10256") // the lost link: nothing answers
	obs := &pingCounter{pings: map[netip.AddrPort][2]int{}, checks: map[netip.AddrPort][2]int{}}
	changed := make(chan struct{}, 64)
	c := healthcheck.New(healthcheck.Options{Interval: 100 * time.Millisecond, HTTPInterval: 3 * time.Second,
		Timeout: 300 * time.Millisecond, FailuresToWithdraw: 2, SuccessesToReturn: 2},
		func(netip.AddrPort) {
			select {
			case changed <- struct{}{}:
			default:
			}
		}, obs)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	c.Set([]netip.AddrPort{live1, live2, gone})

	wait := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for !ok() {
			select {
			case <-changed:
			case <-time.After(50 * time.Millisecond):
			case <-deadline:
				t.Fatalf("%s: not within 30 s; states %s %s %s, pings %v, HTTP checks %v", what,
					c.State(live1), c.State(live2), c.State(gone), obs.pings, obs.checks)
			}
		}
	}
	wait("the live nodes healthy, pinged, the gone one unhealthy", func() bool {
		return c.State(live1) == healthcheck.Healthy && c.State(live2) == healthcheck.Healthy && c.State(gone) == healthcheck.Unhealthy &&
			obs.get(obs.pings, live1)[1] >= 8 && obs.get(obs.pings, live2)[1] >= 8
	})
	if p := obs.get(obs.pings, gone); p != [2]int{} {
		t.Errorf("the unhealthy node was pinged (%v): it must be checked by HTTP alone", p)
	}
	// Pings replace most HTTP checks: 29 of 30 at these intervals.
	if p, h := obs.get(obs.pings, live1), obs.get(obs.checks, live1); h[1] >= p[1] {
		t.Errorf("%s: %d HTTP checks and %d pings passed, want more pings", live1, h[1], p[1])
	}
	// Right after an HTTP check the next checks are pings (29, for 2.9 s at these
	// intervals).
	h := obs.get(obs.checks, live2)[1]
	wait("an HTTP check of "+live2.String(), func() bool { return obs.get(obs.checks, live2)[1] > h })
	if out, err := exec.Command("ip", "addr", "del", "198.18.133.2/32", "dev", "lo").CombinedOutput(); err != nil {
		t.Fatalf("ip addr del: %v: %s", err, out)
	}
	wait("the node that went unhealthy", func() bool { return c.State(live2) == healthcheck.Unhealthy })
	if p := obs.get(obs.pings, live2); p[0] == 0 {
		t.Errorf("%s went without a failed ping (%v; HTTP checks %v): the pings between HTTP checks did not see it", live2, p, obs.get(obs.checks, live2))
	}
	if c.State(live1) != healthcheck.Healthy {
		t.Errorf("%s: %s, want healthy", live1, c.State(live1))
	}
}
