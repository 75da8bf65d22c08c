package bench

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// restartGoal is the bound on a replica's restart at the goal size:
// from its start until every path is back in the router.
const restartGoal = 15 * time.Second

// restartReplica ends the steady state (with the router lab): the replica
// is stopped as a rolling update of the only replica stops it (SIGTERM;
// bgp.onStop Auto leaves its sessions to close with the process, and the
// router keeps its paths under graceful restart) and started again. The
// figure is the time from its start until the router has received every
// path again on the new session (its "Import updates" received, counted
// from the session's start, at least the paths it held before): the
// replica first takes the leader election's Lease (released at the clean
// stop), then announces from its informers' first complete view, and the
// router's kernel routes are checked to be as before.
func (e *env) restartReplica(ctx context.Context, s *Scenario, scaled bool) error {
	if e.lab == nil {
		return nil
	}
	routes, err := e.lab.Routes(netlab.IPv4)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	before := make(routeTable, len(routes))
	for _, r := range routes {
		before[r.Prefix] = r.NextHops
	}
	paths, err := e.birdImported()
	if err != nil {
		return err
	}
	if len(before) == 0 || paths == 0 {
		s.notef("replica restart not measured: the router had no route before it")
		return nil
	}
	e.log.Info("Restarting the replica", "routes", len(before), "paths", paths)
	took, err := e.ccm.StopWithin(10 * time.Second)
	if err != nil {
		return fmt.Errorf("bench: stopping the replica: %w", err)
	}
	e.ccm = nil // stopped on purpose: the waits below must not fail on it
	// Started once the router has seen the session go, so that the
	// counts below are the new session's.
	if err := e.waitForEvery(ctx, routerPoll, "the router to see the replica's session go", func() (bool, string) {
		st, _, err := e.birdSession()
		return err == nil && st != "Established", st
	}); err != nil {
		return err
	}
	if err := e.startCCM(ctx); err != nil {
		return err
	}
	started := time.Now()
	if err := e.waitForEvery(ctx, routerPoll, "every path received again after the replica's restart", func() (bool, string) {
		st, updates, err := e.birdSession()
		if err != nil {
			return false, err.Error()
		}
		return st == "Established" && updates >= float64(paths), fmt.Sprintf("session %s, %v of %d paths received", st, updates, paths)
	}); err != nil {
		return err
	}
	back := time.Since(started)
	routesBack := e.watchRouter(ctx, "the router's routes as before the restart", sameRoutes(before))
	if _, err := routesBack.wait(); err != nil {
		return err
	}
	s.add("restart_routes_s", "replica restarted (SIGTERM, start): every path received again by the router, from its start", back.Seconds(), "s").
		atMost(restartGoal.Seconds(), fmt.Sprintf("≤ %s", restartGoal), scaled)
	s.notef("replica restart: stopped in %s after SIGTERM; the router kept its %d routes (%d paths) under graceful restart, and has them as before after the restart",
		took.Round(time.Millisecond), len(before), paths)
	return nil
}

// birdSession is the router's IPv4 session with the replica: its state,
// and the paths received on it since it began ("Import updates").
func (e *env) birdSession() (string, float64, error) {
	out, err := e.lab.Birdc("show", "protocols", "all", "spk4_0")
	if err != nil {
		return "", 0, fmt.Errorf("bench: router: %w", err)
	}
	ps := netlab.ParseBirdProtocols(out)
	if len(ps) != 1 {
		return "", 0, fmt.Errorf("bench: router: no protocol spk4_0 in %q", out)
	}
	var updates float64
	if len(ps[0].ImportUpdates) > 0 {
		updates = ps[0].ImportUpdates[0]
	}
	return ps[0].SessionState(), updates, nil
}

// importedRE is the count of paths a BIRD channel holds ("Routes: N
// imported, ...").
var importedRE = regexp.MustCompile(`Routes:\s+(\d+) imported`)

// birdImported is how many paths the router holds from the replica's IPv4
// session.
func (e *env) birdImported() (int, error) {
	out, err := e.lab.Birdc("show", "protocols", "all", "spk4_0")
	if err != nil {
		return 0, fmt.Errorf("bench: router: %w", err)
	}
	m := importedRE.FindStringSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("bench: router: no imported count in %q", out)
	}
	return strconv.Atoi(m[1])
}

// sameRoutes is a router condition: every prefix of want is there with
// the same next hops.
func sameRoutes(want routeTable) func(routeTable) (bool, string) {
	prefixes := slices.Collect(maps.Keys(want))
	return func(t routeTable) (bool, string) {
		bad := 0
		var first netip.Prefix
		for _, p := range prefixes {
			if !slices.Equal(t[p], want[p]) {
				if bad == 0 {
					first = p
				}
				bad++
			}
		}
		if bad == 0 {
			return true, ""
		}
		return false, fmt.Sprintf("%d of %d routes not back as before (first %s: %v, was %v)", bad, len(prefixes), first, t[first], want[first])
	}
}
