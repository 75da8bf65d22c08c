package e2e

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// stopLimit is the documented bound on a replica's stop (docs/deploy.md),
// with a second for the process to be reaped.
const stopLimit = 11 * time.Second

// sessionTimeout bounds the wait for a replica's BGP sessions.
const sessionTimeout = 30 * time.Second

// routers are the routers every stop test runs against.
var routers = []netlab.RouterKind{netlab.RouterBIRD, netlab.RouterFRR}

// TestStopWithAnotherReplica stops a replica with SIGTERM while another one
// runs: it closes its sessions with a Cease, so the router keeps no path of
// it, and what changes while it is down (a Service deleted, a node flipped
// NotReady and Ready) leaves no stale path behind once it is back. This is
// where FRR before the fix of its End-of-RIB stale-path bug kept routes to
// deleted addresses forever when a replica went through graceful restart.
// The replicas run BFD with the router: BIRD keeps its default error wait
// time (60 s, more than sessionTimeout), so a stop whose BFD AdminDown BIRD
// handled before its Cease (a BFD failure of an established session to
// BIRD) keeps the restarted replica's session down past the wait.
func TestStopWithAnotherReplica(t *testing.T) {
	eachRouter(t, netlab.Options{Speakers: 2, BFD: true}, func(t *testing.T, lab *netlab.Lab, router netlab.RouterKind) {
		lease := "e2e-stop-" + string(router)
		pool4, pool6 := "198.18.111.0/24", "2001:db8:111::/120"
		replicas := []*framework.CCM{
			startReplica(t, lab, 0, lease, pool4, pool6),
			startReplica(t, lab, 1, lease, pool4, pool6),
		}
		ns := framework.NewNamespace(t, client, "stop-"+string(router))
		v4, spk := lab.NodeAddrs(netlab.IPv4), lab.SpeakerAddrs(netlab.IPv4)
		waitEstablished(t, lab, sessionTimeout, spk...)
		// BFD with both replicas, on both families' sessions.
		waitBFDUp(t, lab, slices.Concat(spk, lab.SpeakerAddrs(netlab.IPv6))...)

		// restart stops replica i with SIGTERM, checks how it stopped,
		// runs whileDown, then starts it again and waits for its session.
		restart := func(i int, whileDown func(log string)) {
			t.Helper()
			log := stopReplica(t, replicas[i])
			for _, want := range []string{"Closing the BGP sessions", "BGP speaker stopped"} {
				if !strings.Contains(log, want) {
					t.Errorf("replica %d's stop did not log %q:\n%s", i, want, log)
				}
			}
			whileDown(log)
			replicas[i] = startReplica(t, lab, i, lease, pool4, pool6)
			waitEstablished(t, lab, sessionTimeout, spk[i])
			// The restarted replica's BFD sessions, with new
			// discriminators, come up at the router again.
			waitBFDUp(t, lab, spk[i], lab.SpeakerAddrs(netlab.IPv6)[i])
		}

		// A Service deleted while the leader is down.
		{
			framework.CreateLoadBalancer(t, client, ns, "web")
			vip := waitVIPs(t, ns, "web", 1)[0]
			waitRoute(t, lab, vip, v4...)
			leader := 0
			if replicas[1].Leads() {
				leader = 1
			}
			restart(leader, func(log string) {
				if !strings.Contains(log, "Another replica took the leader-election Lease over") {
					t.Errorf("the stopping leader did not hand the Lease over:\n%s", log)
				}
				if err := client.CoreV1().Services(ns).Delete(context.Background(), "web", metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
				waitRoute(t, lab, vip)
			})
			stayWithout(t, lab, vip)
		}

		// A node flipped NotReady and Ready before a restart.
		{
			framework.CreateLoadBalancer(t, client, ns, "web2")
			vip := waitVIPs(t, ns, "web2", 1)[0]
			waitRoute(t, lab, vip, v4...)
			setReady(t, lab.NodeName(0), false)
			waitRoute(t, lab, vip, v4[1:]...)
			setReady(t, lab.NodeName(0), true)
			waitRoute(t, lab, vip, v4...)
			restart(0, func(string) {})
			stayWith(t, lab, vip, spk, v4)
		}
	})
}

// TestStopSingleReplicaKeepsRoutes stops the only replica with SIGTERM while
// a client requests a VIP in a loop: with no other replica to announce, it
// leaves its sessions to close with the process (no Cease), the router keeps
// its paths through graceful restart, and no request is lost until it is
// back. It also releases the leader-election Lease.
func TestStopSingleReplicaKeepsRoutes(t *testing.T) {
	eachRouter(t, netlab.Options{Speakers: 1}, func(t *testing.T, lab *netlab.Lab, router netlab.RouterKind) {
		lease := "e2e-single-" + string(router)
		pool4, pool6 := "198.18.112.0/24", "2001:db8:112::/120"
		c := startReplica(t, lab, 0, lease, pool4, pool6)
		ns := framework.NewNamespace(t, client, "single-"+string(router))
		v4, spk := lab.NodeAddrs(netlab.IPv4), lab.SpeakerAddrs(netlab.IPv4)
		waitEstablished(t, lab, sessionTimeout, spk...)
		vip := servedVIP(t, lab, ns, "web")

		loop := lab.StartRequests(vip)
		time.Sleep(time.Second)
		log := stopReplica(t, c)
		if !strings.Contains(log, "Leaving the BGP sessions to close with the process") || strings.Contains(log, "Closing the BGP sessions") {
			t.Errorf("the only replica did not keep its sessions for graceful restart:\n%s", log)
		}
		l, err := client.CoordinationV1().Leases("kube-system").Get(context.Background(), lease, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if h := ptr.Deref(l.Spec.HolderIdentity, ""); h != "" {
			t.Errorf("the Lease still names %q after the stop, want it released", h)
		}
		// The router keeps forwarding on the kept paths while the
		// replica is down.
		time.Sleep(2 * time.Second)
		if r, ok, err := lab.Route(netlab.HostPrefix(vip)); err != nil || !ok || len(r.NextHops) != len(v4) {
			t.Errorf("route to %s while the replica is down: %v %v %v, want %v", vip, r.NextHops, ok, err, v4)
		}
		startReplica(t, lab, 0, lease, pool4, pool6)
		waitEstablished(t, lab, sessionTimeout, spk...)
		stayWith(t, lab, vip, spk, v4)
		sent, failed, errs := loop.Stop()
		t.Logf("%d requests across the restart, %d failed", sent, failed)
		if failed != 0 || sent < 50 {
			t.Errorf("%d of %d requests failed: %v", failed, sent, errs)
		}
	})
}

// eachRouter runs fn in a subtest per router, each with a lab of 3 nodes
// and opts (its speaker addresses, BFD), and the lab's nodes registered.
func eachRouter(t *testing.T, opts netlab.Options, fn func(t *testing.T, lab *netlab.Lab, router netlab.RouterKind)) {
	for _, router := range routers {
		t.Run(string(router), func(t *testing.T) {
			o := opts
			o.Nodes, o.Router = 3, router
			lab := netlab.New(t, o)
			registerLabNodes(t, lab)
			fn(t, lab, router)
		})
	}
}

// stopReplica sends SIGTERM to a replica, checks that it exits cleanly
// within the documented time, and returns the log of that stop.
func stopReplica(t *testing.T, c *framework.CCM) string {
	t.Helper()
	took, err := c.StopWithin(3 * stopLimit)
	if err != nil {
		t.Fatalf("replica %s did not exit within %s of SIGTERM", c.Name, 3*stopLimit)
	}
	log := c.Log()
	if i := strings.LastIndex(log, "Stopping on a signal"); i >= 0 {
		log = log[i:]
	}
	if took > stopLimit {
		t.Errorf("replica %s took %s to exit after SIGTERM, want at most %s", c.Name, took, stopLimit)
	}
	if err := c.Err(); err != nil {
		t.Errorf("replica %s exited with %v after SIGTERM, want 0:\n%s", c.Name, err, log)
	}
	return log
}

// settle is how long a restarted replica's paths must stay as checked: past
// its End-of-RIB, when a router drops the stale paths it kept.
const settle = 5 * time.Second

// stayWithout checks that the router has no route to ip, for settle.
func stayWithout(t *testing.T, lab *netlab.Lab, ip netip.Addr) {
	t.Helper()
	for end := time.Now().Add(settle); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if r, ok, err := lab.Route(netlab.HostPrefix(ip)); err != nil || ok {
			t.Fatalf("route to %s after the restart: %v (%v), want none", ip, r.NextHops, err)
		}
		if paths := ribPaths(t, lab, ip); len(paths) != 0 {
			t.Fatalf("the router still has BGP paths for %s: %v", ip, paths)
		}
	}
}

// stayWith waits until the router's BGP table has exactly one path per
// speaker and hop for ip (a restarted speaker's paths come a moment after
// its session, and stale ones go at its End-of-RIB), then checks, for
// settle, that it keeps them and that the kernel has exactly hops: nothing
// stale survives the restart.
func stayWith(t *testing.T, lab *netlab.Lab, ip netip.Addr, speakers, hops []netip.Addr) {
	t.Helper()
	want := waitPaths(t, lab, ip, speakers, hops)
	for end := time.Now().Add(settle); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		r, ok, err := lab.Route(netlab.HostPrefix(ip))
		if err != nil || !ok || len(r.NextHops) != len(hops) {
			t.Fatalf("route to %s after the restart: %v %v %v, want %v", ip, r.NextHops, ok, err, hops)
		}
		if got := ribPaths(t, lab, ip); !sameSet(got, want) {
			t.Fatalf("BGP paths for %s after the restart: %v, want %v", ip, got, want)
		}
	}
}

// waitPaths waits until the kernel has exactly hops for ip and the
// router's BGP table exactly one path per speaker and hop, and returns
// those paths as ribPaths gives them.
func waitPaths(t *testing.T, lab *netlab.Lab, ip netip.Addr, speakers, hops []netip.Addr) []string {
	t.Helper()
	waitRoute(t, lab, ip, hops...)
	var want []string
	for _, s := range speakers {
		for _, h := range hops {
			want = append(want, s.String()+" via "+h.String())
		}
	}
	var got []string
	for deadline := time.Now().Add(sessionTimeout); ; time.Sleep(200 * time.Millisecond) {
		if got = ribPaths(t, lab, ip); sameSet(got, want) {
			return want
		}
		if time.Now().After(deadline) {
			t.Fatalf("BGP paths for %s: %v, want %v", ip, got, want)
		}
	}
}

// ribPaths are the router's BGP paths for ip, as "speaker via next hop".
func ribPaths(t *testing.T, lab *netlab.Lab, ip netip.Addr) []string {
	t.Helper()
	paths, err := lab.BGPPaths(netlab.HostPrefix(ip))
	if err != nil {
		t.Fatalf("router's BGP paths for %s: %v", ip, err)
	}
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		out = append(out, p.Peer.String()+" via "+p.NextHop.String())
	}
	return out
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	count := map[string]int{}
	for _, s := range a {
		count[s]++
	}
	for _, s := range b {
		count[s]--
	}
	for _, n := range count {
		if n != 0 {
			return false
		}
	}
	return true
}

// waitBFDUp waits until the router's BFD sessions with addrs are up.
func waitBFDUp(t *testing.T, lab *netlab.Lab, addrs ...netip.Addr) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sessionTimeout)
	defer cancel()
	if err := lab.WaitBFDUp(ctx, addrs...); err != nil {
		t.Fatalf("BFD sessions with %v not up at the router: %v\n%s", addrs, err, lab.RouterLog())
	}
}
