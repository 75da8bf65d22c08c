package chaos

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// routeLimit is how soon after a session comes up all its routes must be back.
const routeLimit = 5 * time.Second

// protocol is the router's BGP protocol of IPv4 session i (netlab's naming).
func protocol(i int) string { return fmt.Sprintf("spk4_%d", i) }

// protocolRoutes counts the routes (paths) the router holds from protocol p.
func protocolRoutes(p string) (int, error) {
	out, err := lab.Birdc("show", "route", "protocol", p, "count")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(out, "\n") {
		var n int
		if strings.Contains(line, " routes for ") {
			if _, err := fmt.Sscanf(strings.TrimSpace(line), "%d of", &n); err == nil {
				return n, nil
			}
		}
	}
	return 0, fmt.Errorf("no route count in %q", out)
}

// kernelComplete counts the router's kernel routes to the given addresses
// that have every node as next hop.
func kernelComplete(vips map[netip.Addr]bool) int {
	routes, err := lab.Routes(netlab.IPv4)
	if err != nil {
		return 0
	}
	want := fmt.Sprint(lab.NodeAddrs(netlab.IPv4))
	n := 0
	for _, r := range routes {
		if vips[r.Prefix.Addr()] && r.Prefix.Bits() == 32 && fmt.Sprint(r.NextHops) == want {
			n++
		}
	}
	return n
}

// sessionTimes polls the router until session i of each index in sessions is
// up and holds want paths, and returns, for each, how long that took from
// the moment it came up.
func sessionTimes(ctx context.Context, sessions []int, want int) (map[int]time.Duration, error) {
	up := map[int]time.Time{}
	took := map[int]time.Duration{}
	for len(took) < len(sessions) {
		states, err := lab.SessionStates()
		if err == nil {
			for _, i := range sessions {
				if _, done := took[i]; done {
					continue
				}
				if states[netlab.SpeakerAddr(netlab.IPv4, i)] != "Established" {
					delete(up, i)
					continue
				}
				if _, ok := up[i]; !ok {
					up[i] = time.Now()
				}
				if n, err := protocolRoutes(protocol(i)); err == nil && n >= want {
					took[i] = time.Since(up[i])
				}
			}
		}
		select {
		case <-ctx.Done():
			return took, fmt.Errorf("sessions %v: %d of %d have all %d paths (states %v): %w", sessions, len(took), len(sessions), want, states, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	return took, nil
}

// TestChaosRouterRestart restarts the router, then flaps single BGP
// sessions, with Services announced by three replicas: each session must
// have all its routes back within 5s of coming up. A client requests a VIP
// through the flaps (a router restart takes the router itself away, so no
// loop runs through it).
func TestChaosRouterRestart(t *testing.T) {
	needLabOrRecord(t, "router restart", "BGP session flap")
	ns := "chaos-router"
	ctx, _, tr := setup(t, ns, 3, "  - {name: default, addresses: [198.18.52.0/22]}\n", fastLease)
	n := prof.routeServices
	populate(ctx, t, ns, "r", n, tr)
	vips := map[netip.Addr]bool{}
	for i := range n {
		vips[netip.MustParseAddr(tr.firstIP(serviceName("r", i)))] = true
	}
	paths := n * nodeCount
	all := []int{0, 1, 2}
	if _, err := sessionTimes(ctx, all, paths); err != nil {
		t.Fatal(err)
	}
	for _, i := range all {
		got, err := protocolRoutes(protocol(i))
		t.Logf("session %d: %d paths (%d Services x %d nodes), %v", i, got, n, nodeCount, err)
	}

	restart := result{fault: "router restart (BIRD stopped and started)", requests: -1, duplicates: -1, changed: -1,
		scale: fmt.Sprintf("%d routes x 3 sessions", n), limit: routeLimit, note: "no request loop: the router itself is down"}
	for range prof.routerRestarts {
		restart.injected++
		if err := lab.RestartRouter(); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		rctx, rcancel := context.WithTimeout(ctx, 2*time.Minute)
		took, err := sessionTimes(rctx, all, paths)
		rcancel()
		if err != nil {
			t.Errorf("after a router restart: %v", err)
			continue
		}
		worst := maxOf(took)
		restart.recovery = append(restart.recovery, worst)
		t.Logf("router restarted: every session up with all its routes %s after the restart; at most %s after a session came up (%v); kernel routes complete: %d of %d",
			time.Since(start).Round(time.Millisecond), worst.Round(time.Millisecond), took, kernelComplete(vips), n)
		if worst <= routeLimit {
			restart.survived++
		} else {
			t.Errorf("routes back %s after their session came up, more than %s", worst, routeLimit)
		}
	}
	restart.pass = restart.survived == restart.injected
	record(restart)

	flap := result{fault: "BGP session flap (one session disabled and enabled)", requests: -1, duplicates: -1, changed: -1,
		scale: fmt.Sprintf("%d routes, 1 of 3 sessions", n), limit: routeLimit}
	vip := netip.MustParseAddr(tr.firstIP(serviceName("r", 0)))
	if err := lab.ServeVIP(vip); err != nil {
		t.Fatal(err)
	}
	loop := lab.StartRequests(vip)
	for k := range prof.flaps {
		i := k % 3
		flap.injected++
		if _, err := lab.Birdc("disable", protocol(i)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		if _, err := lab.Birdc("enable", protocol(i)); err != nil {
			t.Fatal(err)
		}
		fctx, fcancel := context.WithTimeout(ctx, 2*time.Minute)
		took, err := sessionTimes(fctx, []int{i}, paths)
		fcancel()
		if err != nil {
			t.Errorf("after a flap of session %d: %v", i, err)
			continue
		}
		flap.recovery = append(flap.recovery, took[i])
		t.Logf("session %d flapped: all its routes back %s after it came up", i, took[i].Round(time.Millisecond))
		if took[i] <= routeLimit {
			flap.survived++
		} else {
			t.Errorf("routes back %s after the session came up, more than %s", took[i], routeLimit)
		}
	}
	endLoop(t, loop, &flap)
	flap.pass = flap.survived == flap.injected && flap.lost == 0
	record(flap)
	if got := kernelComplete(vips); got != n {
		t.Errorf("%d of %d kernel routes complete at the end", got, n)
	}
}

func maxOf(m map[int]time.Duration) time.Duration {
	var worst time.Duration
	for _, d := range m {
		worst = max(worst, d)
	}
	return worst
}

// needLabOrRecord skips a test that needs the router lab, and records its
// rows as skipped.
func needLabOrRecord(t *testing.T, faults ...string) {
	t.Helper()
	if lab != nil {
		return
	}
	for _, f := range faults {
		record(result{fault: f, requests: -1, duplicates: -1, changed: -1, skipped: labSkip})
	}
	needLab(t)
}
