package bench

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
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
// figure is the time from its start until the router has every path again:
// the End-of-RIB of the new session, which ends the router's graceful
// restart ("Neighbor graceful restart active" gone), and which the speaker
// sends after the paths of its announcer's first complete view. Until then
// the router's count of the session's paths is polled: a path it dropped
// meanwhile (a stale one flushed before the replica sent it again) is
// counted as lost. The replica first takes the leader election's Lease
// (released at the clean stop), then announces from its informers' first
// complete view, and the router's kernel routes are checked to be as before.
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
	p, err := e.birdSession()
	if err != nil {
		return err
	}
	paths := imported(p)
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
	least := paths
	// Started once the router has seen the session go, and keeps its
	// paths under graceful restart, so that what follows is the new
	// session's.
	if err := e.waitForEvery(ctx, routerPoll, "the router to see the replica's session go, keeping its paths", func() (bool, string) {
		p, err := e.birdSession()
		if err != nil {
			return false, err.Error()
		}
		least = min(least, imported(p))
		return p.SessionState() != "Established" && p.GracefulRestart, fmt.Sprintf("session %s, graceful restart active %v", p.SessionState(), p.GracefulRestart)
	}); err != nil {
		return err
	}
	if err := e.startCCM(ctx); err != nil {
		return err
	}
	started := time.Now()
	if err := e.waitForEvery(ctx, routerPoll, "the End-of-RIB of the replica's new session", func() (bool, string) {
		p, err := e.birdSession()
		if err != nil {
			return false, err.Error()
		}
		least = min(least, imported(p))
		st := p.SessionState()
		return st == "Established" && !p.GracefulRestart, fmt.Sprintf("session %s, graceful restart active %v, %d of %d paths", st, p.GracefulRestart, imported(p), paths)
	}); err != nil {
		return err
	}
	back := time.Since(started)
	p, err = e.birdSession()
	if err != nil {
		return err
	}
	routesBack := e.watchRouter(ctx, "the router's routes as before the restart", sameRoutes(before))
	if _, err := routesBack.wait(); err != nil {
		return err
	}
	s.add("restart_routes_s", "replica restarted (SIGTERM, start): every path back in the router (the new session's End-of-RIB), from its start", back.Seconds(), "s").
		atMost(restartGoal.Seconds(), fmt.Sprintf("≤ %s", restartGoal), scaled)
	s.add("restart_lost_paths", "paths the router dropped during the restart (polled)", float64(paths-least), "").
		atMost(0, "0", scaled)
	s.notef("replica restart: stopped in %s after SIGTERM; the router kept its %d routes (%d paths) under graceful restart, held %d paths at the End-of-RIB, and has its routes as before after the restart",
		took.Round(time.Millisecond), len(before), paths, imported(p))
	return e.coldStart(ctx, s, before, paths)
}

// coldStart follows the restart: the whole deployment starts from nothing.
// The router's session with the replica is disabled, so that it forgets
// every path at once (not kept under graceful restart), the replica is
// stopped, the session enabled again and the replica started: the time
// from its start until the router has every path it had and its routes as
// before. The replica takes the Lease its predecessor released, lists
// every node and Service, and sends every path on a new session.
func (e *env) coldStart(ctx context.Context, s *Scenario, before routeTable, paths int) error {
	if _, err := e.lab.Birdc("disable", "spk4_0"); err != nil {
		return fmt.Errorf("bench: router: %w", err)
	}
	if _, err := e.ccm.StopWithin(10 * time.Second); err != nil {
		return fmt.Errorf("bench: stopping the replica: %w", err)
	}
	e.ccm = nil
	if _, err := e.lab.Birdc("enable", "spk4_0"); err != nil {
		return fmt.Errorf("bench: router: %w", err)
	}
	p, err := e.birdSession()
	if err != nil {
		return err
	}
	if n := imported(p); n != 0 {
		return fmt.Errorf("bench: the router kept %d paths of a disabled session", n)
	}
	if err := e.startCCM(ctx); err != nil {
		return err
	}
	started := time.Now()
	if err := e.waitForEvery(ctx, routerPoll, "every path of the cold start in the router", func() (bool, string) {
		p, err := e.birdSession()
		if err != nil {
			return false, err.Error()
		}
		return p.SessionState() == "Established" && imported(p) >= paths, fmt.Sprintf("session %s, %d of %d paths", p.SessionState(), imported(p), paths)
	}); err != nil {
		return err
	}
	back := time.Since(started)
	if _, err := e.watchRouter(ctx, "the router's routes as before the cold start", sameRoutes(before)).wait(); err != nil {
		return err
	}
	s.add("cold_start_s", "cold start (the router without the replica's paths, the replica started): every path in the router, from its start", back.Seconds(), "s")
	return nil
}

// birdSession is the router's IPv4 session with the replica.
func (e *env) birdSession() (netlab.BirdProtocol, error) {
	out, err := e.lab.Birdc("show", "protocols", "all", "spk4_0")
	if err != nil {
		return netlab.BirdProtocol{}, fmt.Errorf("bench: router: %w", err)
	}
	ps := netlab.ParseBirdProtocols(out)
	if len(ps) != 1 {
		return netlab.BirdProtocol{}, fmt.Errorf("bench: router: no protocol spk4_0 in %q", out)
	}
	return ps[0], nil
}

// imported is how many paths the router holds from a session (all its
// channels; stale ones kept through a restart included).
func imported(p netlab.BirdProtocol) int {
	n := 0
	for _, c := range p.Imported {
		n += c
	}
	return n
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
