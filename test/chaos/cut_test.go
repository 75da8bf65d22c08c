package chaos

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// announces reports whether the router holds a path to ip from session i.
func announces(i int, ip netip.Addr) bool {
	out, err := lab.Birdc("show", "route", "for", netip.PrefixFrom(ip, 32).String(), "protocol", protocol(i))
	return err == nil && strings.Contains(out, netip.PrefixFrom(ip, 32).String())
}

// waitUntil polls cond every 100ms until it holds or ctx ends, and returns
// how long that took.
func waitUntil(ctx context.Context, what string, cond func() bool) (time.Duration, error) {
	start := time.Now()
	for !cond() {
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("%s: %w", what, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	return time.Since(start), nil
}

// TestChaosReplicaCutOff cuts one replica off from the API server (its
// traffic goes through a proxy that then drops everything), first a
// follower, then the leader. See docs/reliability.md for what each does with
// its announcements.
func TestChaosReplicaCutOff(t *testing.T) {
	ns := "chaos-cut"
	ctx, rs, tr := setup(t, ns, 3, "  - {name: default, addresses: [198.18.56.0/24]}\n", fastLease)
	n := prof.cutServices
	populate(ctx, t, ns, "c", n, tr)
	var loop *netlab.RequestLoop
	if lab != nil {
		if _, err := sessionTimes(ctx, []int{0, 1, 2}, n*nodeCount); err != nil {
			t.Fatal(err)
		}
		vip := netip.MustParseAddr(tr.firstIP(serviceName("c", 0)))
		if err := lab.ServeVIP(vip); err != nil {
			t.Fatal(err)
		}
		loop = lab.StartRequests(vip)
	}
	follower := cutFollower(ctx, t, rs, tr, ns, n)
	leader := cutLeader(ctx, t, rs, tr, ns)
	if loop != nil {
		sent, failed, errs := loop.Stop()
		follower.requests, follower.lost = sent, failed
		leader.requests, leader.lost = sent, failed
		leader.note += " (one request loop ran through both cuts)"
		if failed > 0 {
			t.Errorf("%d of %d requests failed: %v", failed, sent, errs)
			follower.pass, leader.pass = false, false
		}
	}
	var res result
	checkFinal(ctx, t, tr, ns, n+1, &res)
	follower.duplicates, follower.changed = res.duplicates, res.changed
	leader.duplicates, leader.changed = res.duplicates, res.changed
	record(follower)
	record(leader)
}

// cutFollower cuts a follower off. It keeps running and keeps announcing what
// it last saw: a Service deleted meanwhile stays announced by it, a new one
// is not. Once the cut ends it catches up; recovery is how long that takes.
func cutFollower(ctx context.Context, t *testing.T, rs *replicaSet, tr *tracker, ns string, n int) result {
	t.Helper()
	res := result{fault: "follower cut off from the API server, then reconnected", requests: -1, injected: 1,
		scale: fmt.Sprintf("%d Services, 1 of 3 replicas", n), note: "keeps its last announcements while cut"}
	l, err := rs.waitLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f := (l + 1) % 3
	proc := rs.proc(f)
	rs.proxies[f].Cut(framework.Blackhole)
	cutAt := time.Now()
	if err := createService(ctx, framework.LoadBalancerService(ns, "during-cut", framework.WithoutNodePorts)); err != nil {
		t.Fatal(err)
	}
	if err := tr.waitAssigned(ctx, n+1); err != nil {
		t.Fatalf("the leader stopped allocating while a follower was cut off: %v", err)
	}
	gone := serviceName("c", n-1)
	goneIP := netip.MustParseAddr(tr.firstIP(gone))
	if err := client.CoreV1().Services(ns).Delete(ctx, gone, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	newIP := netip.MustParseAddr(tr.firstIP("during-cut"))
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if lab != nil {
		others := []int{l, 3 - l - f}
		if _, err := waitUntil(wctx, "the others withdraw the deleted Service and announce the new one", func() bool {
			return !announces(others[0], goneIP) && !announces(others[1], goneIP) && announces(others[0], newIP) && announces(others[1], newIP)
		}); err != nil {
			t.Fatal(err)
		}
		if !announces(f, goneIP) {
			t.Errorf("the cut-off follower withdrew %s without seeing the deletion", goneIP)
		}
		if announces(f, newIP) {
			t.Errorf("the cut-off follower announces %s, created after the cut", newIP)
		}
		if err := lab.WaitRoute(wctx, netlab.HostPrefix(newIP), lab.NodeAddrs(netlab.IPv4)); err != nil {
			t.Error(err)
		}
	}
	// Past two lease durations: a follower has no lease to lose.
	time.Sleep(time.Until(cutAt.Add(8 * time.Second)))
	if proc.Exited() {
		t.Errorf("the cut-off follower %s exited", proc.Name)
	}
	rs.proxies[f].Restore()
	if lab != nil {
		took, err := waitUntil(wctx, "the reconnected follower catches up", func() bool {
			return !announces(f, goneIP) && announces(f, newIP)
		})
		if err != nil {
			t.Error(err)
		} else {
			res.recovery = append(res.recovery, took)
			t.Logf("follower %s cut off for %s, caught up %s after it was reconnected", proc.Name,
				time.Since(cutAt).Round(time.Second), took.Round(time.Millisecond))
		}
	} else {
		res.note += "; announcements not checked: " + labSkip
	}
	if proc.Exited() {
		t.Errorf("the follower %s exited", proc.Name)
	} else if !t.Failed() {
		res.survived = 1
	}
	res.pass = !t.Failed()
	return res
}

// cutLeader cuts the leader off. It cannot renew its lease, so the upstream
// manager ends the process once the renew deadline passes; another replica
// takes the lease and allocates. Recovery is the time from the cut to the
// new leader. The router keeps the dead replica's routes until the graceful
// restart time runs out; the others announce the same paths meanwhile.
func cutLeader(ctx context.Context, t *testing.T, rs *replicaSet, tr *tracker, ns string) result {
	t.Helper()
	res := result{fault: "leader cut off from the API server", requests: -1, injected: 1,
		scale: "1 of 3 replicas", note: "exits after the renew deadline; the router drops its paths after graceful restart"}
	l, err := rs.waitLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	proc := rs.proc(l)
	holder := rs.holder(ctx)
	rs.proxies[l].Cut(framework.Blackhole)
	cutAt := time.Now()
	exitAt := make(chan time.Time, 1)
	go func() { <-proc.Done(); exitAt <- time.Now() }()
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := rs.waitHolderChange(wctx, holder); err != nil {
		t.Fatal(err)
	}
	res.recovery = append(res.recovery, time.Since(cutAt))
	var exited time.Duration
	select {
	case at := <-exitAt:
		exited = at.Sub(cutAt)
	case <-wctx.Done():
		t.Fatalf("the cut-off leader %s did not exit", proc.Name)
	}
	t.Logf("leader %s cut off: process ended after %s, lease passed after %s", proc.Name,
		exited.Round(time.Millisecond), res.recovery[0].Round(time.Millisecond))
	before := tr.assignedCount()
	if err := createService(ctx, framework.LoadBalancerService(ns, "after-leader-cut", framework.WithoutNodePorts)); err != nil {
		t.Fatal(err)
	}
	if err := tr.waitAssigned(wctx, before+1); err != nil {
		t.Errorf("the new leader does not allocate: %v", err)
	}
	if lab != nil {
		gctx, gcancel := context.WithTimeout(ctx, grRestartTime+30*time.Second)
		defer gcancel()
		exitedAgo := time.Since(cutAt) - exited
		flushed, err := waitUntil(gctx, "the router drops the dead leader's paths", func() bool {
			c, err := protocolRoutes(protocol(l))
			return err == nil && c == 0
		})
		if err != nil {
			t.Error(err)
		}
		t.Logf("the router dropped the dead leader's paths %s after it exited (graceful restart time %s)",
			(flushed + exitedAgo).Round(time.Second), grRestartTime)
	}
	if lab == nil {
		res.note += "; announcements not checked: " + labSkip
	}
	// As its DaemonSet would, start it again, reconnected.
	rs.proxies[l].Restore()
	if _, err := rs.start(l); err != nil {
		t.Fatal(err)
	}
	if !t.Failed() {
		res.survived = 1
	}
	res.pass = !t.Failed()
	return res
}
