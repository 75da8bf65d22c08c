package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// outsideFault is the row of TestChaosOutOfPoolStatus.
const outsideFault = "out-of-pool address written to a Service's status, again and again"

// outsidePoll is how often the router's kernel is asked for the addresses
// written: an announced address reached it within 50 ms before the fix.
const outsidePoll = 50 * time.Millisecond

// TestChaosOutOfPoolStatus writes an address in no pool into the status of
// Services two replicas serve, again and again (as whoever may write
// services/status could, or a controller that keeps rewriting it), while
// the router's kernel is polled: no replica may ever announce one. In the
// end each Service shows its own address, routed, or one of those written
// (kept as adopted: the "IPs changed" column), not routed.
func TestChaosOutOfPoolStatus(t *testing.T) {
	if lab == nil {
		record(result{fault: outsideFault, requests: -1, duplicates: -1, changed: -1, skipped: labSkip})
		t.Skipf("skipping: %s", labSkip)
	}
	ns := "chaos-outside"
	ctx, _, tr := setup(t, ns, 2, "  - {name: default, addresses: [198.18.76.0/24]}\n", steadyLease)
	n := prof.outsideServices
	populate(ctx, t, ns, "o", n, tr)
	if err := lab.WaitEstablished(ctx, lab.SpeakerAddrs(netlab.IPv4)[:2]...); err != nil {
		t.Fatalf("sessions: %v", err)
	}
	own := make([]netip.Addr, n)
	for i := range n {
		own[i] = netip.MustParseAddr(tr.firstIP(serviceName("o", i)))
		if err := lab.WaitRoute(ctx, netlab.HostPrefix(own[i]), lab.NodeAddrs(netlab.IPv4)); err != nil {
			t.Fatal(err)
		}
	}
	res := result{fault: outsideFault, requests: -1, duplicates: -1, injected: n,
		scale: fmt.Sprintf("%d Services, 2 replicas, each status rewritten %d times, one second apart", n, prof.outsideRewrites)}
	// 198.18.99.1 to .250, in turn: in no pool of the suite.
	outside := func(i, round int) netip.Addr {
		a := netip.MustParseAddr("198.18.99.0")
		for range 1 + (i+round*n)%250 {
			a = a.Next()
		}
		return a
	}
	announced := map[netip.Addr]bool{}
	poll := func(round int, until time.Time) {
		for time.Now().Before(until) {
			for i := range n {
				a := outside(i, round)
				if _, ok, err := lab.Route(netlab.HostPrefix(a)); err != nil {
					t.Fatal(err)
				} else if ok {
					announced[a] = true
				}
			}
			time.Sleep(outsidePoll)
		}
	}
	for round := range prof.outsideRewrites {
		for i := range n {
			writeStatus(ctx, t, ns, serviceName("o", i), outside(i, round))
		}
		poll(round, time.Now().Add(time.Second))
		for i := range n {
			if paths, err := lab.BGPPaths(netlab.HostPrefix(outside(i, round))); err != nil {
				t.Fatal(err)
			} else if len(paths) > 0 {
				announced[outside(i, round)] = true
			}
		}
	}
	// The status is the allocator's record: the leader sets the Service's
	// own address back, or keeps one of those written (as adopted, with a
	// Warning). Either way, in the end, a pool address is routed and any
	// other is not.
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	time.Sleep(time.Second)
	for i, a := range own {
		name := serviceName("o", i)
		now := tr.currentIPs(name)
		written := false
		for round := range prof.outsideRewrites {
			written = written || now == outside(i, round).String()
		}
		switch {
		case now == a.String():
			if err := lab.WaitRoute(wctx, netlab.HostPrefix(a), lab.NodeAddrs(netlab.IPv4)); err != nil {
				t.Errorf("%s: its own address %s is not routed again: %v", name, a, err)
			}
		case written:
			res.changed++
			if err := lab.WaitRoute(wctx, netlab.HostPrefix(a), nil); err != nil {
				t.Errorf("%s: its old address %s stays routed: %v", name, a, err)
			}
			if _, ok, err := lab.Route(netlab.HostPrefix(netip.MustParseAddr(now))); err != nil || ok {
				t.Errorf("%s: the address it kept, %s, is routed (%v)", name, now, err)
			}
		default:
			t.Errorf("%s: the status shows %q, want %s or an address written", name, now, a)
		}
	}
	res.survived = n
	for i := range n {
		for round := range prof.outsideRewrites {
			if announced[outside(i, round)] {
				res.survived--
				break
			}
		}
	}
	res.pass = len(announced) == 0 && !t.Failed()
	res.note = fmt.Sprintf("a Service survives when none of the addresses written into its status reached the router (kernel polled every %s, BGP table after each write); %d of %d addresses announced",
		outsidePoll, len(announced), n*prof.outsideRewrites)
	if len(announced) > 0 {
		t.Errorf("addresses in no pool reached the router: %v", announced)
	}
	record(res)
}

// writeStatus sets the Service's status to the one address, as a merge
// patch of the status subresource.
func writeStatus(ctx context.Context, t *testing.T, ns, name string, addr netip.Addr) {
	t.Helper()
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"loadBalancer": map[string]any{
		"ingress": []map[string]string{{"ip": addr.String()}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Services(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
}
