package healthcheck_test

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
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
