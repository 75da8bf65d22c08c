package chaos

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// rollingPool holds the rolling restart's addresses (1024).
const rollingPool = "  - {name: default, addresses: [198.18.44.0/22]}\n"

// stopLimit is the documented bound on a replica's stop after SIGTERM
// (docs/deploy.md, "Stopping").
const stopLimit = 10 * time.Second

// minReady is how long a restarted replica runs before the next one is
// stopped, as the chart's minReadySeconds (15s) does, shortened for the
// test's fast sessions.
const minReady = 3 * time.Second

// TestChaosRollingRestart restarts every replica of three in turn with
// SIGTERM, as a rolling update does, while Services are created and (with
// the router lab) a client requests a VIP. Each stop must end within the
// documented time with exit code 0; no request may be lost (the stopping
// replica withdraws its paths with a Cease while the others announce), no
// address moves and none is held twice.
func TestChaosRollingRestart(t *testing.T) {
	ns := "chaos-rolling"
	ctx, rs, tr := setup(t, ns, 3, rollingPool, steadyLease)
	rounds := max(1, prof.kills/3)
	res := result{fault: "SIGTERM of each replica in turn (rolling restart) during a Service storm", requests: -1,
		scale: fmt.Sprintf("%d Services, 3 replicas, %d rounds", prof.stormServices, rounds), limit: stopLimit}
	loop := vipLoop(ctx, t, ns, tr, 3)

	st := startStorm(ctx, ns, "r", prof.stormServices, time.Duration(rounds*3)*8*time.Second)
	for range rounds {
		for i := range rs.size() {
			took, err := rollReplica(ctx, t, rs, i)
			if err != nil {
				t.Errorf("replica %d: %v", i, err)
			}
			res.tally(took, err)
		}
	}
	want := afterStorm(ctx, t, st, tr, prof.stormServices)
	time.Sleep(2 * time.Second)
	endLoop(t, loop, &res)
	res.note = "recovery: SIGTERM to exit; each replica back with its session up before the next stops"
	checkFinal(ctx, t, tr, ns, want, &res)
	record(res)
}

// rollReplica stops replica i with SIGTERM, checks the stop, starts it
// again and waits for its session and minReady. It returns how long the
// process took to exit.
func rollReplica(ctx context.Context, t *testing.T, rs *replicaSet, i int) (time.Duration, error) {
	t.Helper()
	c := rs.proc(i)
	took, err := c.StopWithin(3 * stopLimit)
	if err != nil {
		return 0, fmt.Errorf("%s did not exit within %s of SIGTERM", c.Name, 3*stopLimit)
	}
	var problems []string
	if took > stopLimit {
		problems = append(problems, fmt.Sprintf("exit took %s, limit %s", took.Round(time.Millisecond), stopLimit))
	}
	if err := c.Err(); err != nil {
		problems = append(problems, fmt.Sprintf("exit: %v", err))
	}
	if !c.LogContains("bgp speaker stopped") {
		problems = append(problems, "no \"BGP speaker stopped\" in its log (another replica ran: it must withdraw)")
	}
	if _, err := rs.start(i); err != nil {
		return 0, err
	}
	if lab != nil {
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := lab.WaitEstablished(wctx, lab.SpeakerAddrs(netlab.IPv4)[i]); err != nil {
			return 0, fmt.Errorf("session of the restarted replica %d: %w", i, err)
		}
	}
	time.Sleep(minReady)
	t.Logf("SIGTERM %s: exited after %s", c.Name, took.Round(time.Millisecond))
	if len(problems) > 0 {
		return took, fmt.Errorf("%s: %s", c.Name, strings.Join(problems, "; "))
	}
	return took, nil
}
