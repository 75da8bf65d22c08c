package bench

import (
	"context"
	"math"
	"slices"
	"time"
)

// joinStorm is scenario 1: JoinNodes nodes register at once with the
// uninitialized taint; how long until the CCM has initialized them all, and
// each one, and with how many API requests. The nodes are deleted after, so
// that they are not next hops of the later scenarios' announcements.
func (e *env) joinStorm(ctx context.Context, s *Scenario) error {
	n := e.o.JoinNodes
	names, ips := nodeSet("join", joinNodeBase, n)
	before, err := e.sample(ctx)
	if err != nil {
		return err
	}
	began, err := e.registerNodes(ctx, names, ips, true)
	if err != nil {
		return err
	}
	registered := time.Now()
	if err := e.waitInitialized(ctx, names); err != nil {
		return err
	}
	after, err := e.settle(ctx)
	if err != nil {
		return err
	}
	d := before.to(after)
	inits := e.w.initTimes(names)
	starts := make([]time.Time, n)
	for i, name := range names {
		starts[i] = began[name]
	}
	lat := latencies(names, starts, inits)
	scaled := n < goalJoinNodes
	s.add("nodes_initialized", "nodes initialized", float64(len(inits)), "count")
	s.add("all_initialized_s", "time until all initialized", latest(inits).Sub(before.at).Seconds(), "s").
		withFloor(e.floors.join.Seconds()).ratioAtMost(1.5, scaled)
	s.add("registered_s", "(the harness registered them all in)", registered.Sub(before.at).Seconds(), "s").
		withFloor(e.floors.joinCreate.Seconds())
	s.add("after_registered_s", "all initialized, after the last registration", latest(inits).Sub(registered).Seconds(), "s")
	s.add("p50_s", "per node, p50", percentile(lat, 0.50).Seconds(), "s").
		withFloor(e.floors.joinP50.Seconds())
	// Judged against the floor's own p99 in the same run, not a fixed
	// time: the harness and the API server move from run to run, and
	// the floor with them.
	s.add("p99_s", "per node, p99", percentile(lat, 0.99).Seconds(), "s").
		withFloor(e.floors.joinP99.Seconds()).ratioAtMost(joinP99Ratio, scaled)
	s.add("api_requests", "CCM API requests", d.requests, "req")
	s.add("api_writes_per_node", "CCM API writes per node", d.writes/float64(n), "per item")
	cpuFigures(s, d)
	s.notef("per-node latency runs from the start of the node's registration to the watch event that shows it initialized; "+
		"the floor is a trivial controller removing the taint of the same number of nodes, registered the same way, with one "+
		"patch each and the CCM's client limits (QPS %g, burst %d, %d in flight), before the CCM starts (its per-node p50 and p99 "+
		"are timed the same way); the floor of the registration line is the harness's registration during the floor", e.o.ClientQPS, e.o.ClientBurst, e.o.Workers)
	e.log.Info("Deleting the storm's nodes", "nodes", n)
	return e.deleteNodes(ctx, names)
}

// joinP99Ratio is the goal of the storm's per-node p99, as a multiple of
// the floor's p99 (at 1,000 and 5,000 nodes; issue 34).
const joinP99Ratio = 1.2

// latencies are, for each name (with its start at the same index), the
// time from its start to its time in seen; names missing from seen are
// left out.
func latencies(names []string, start []time.Time, seen map[string]time.Time) []time.Duration {
	out := make([]time.Duration, 0, len(names))
	for i, name := range names {
		if t, ok := seen[name]; ok {
			out = append(out, t.Sub(start[i]))
		}
	}
	return out
}

// percentile is the q-quantile (nearest rank) of the durations.
func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}
