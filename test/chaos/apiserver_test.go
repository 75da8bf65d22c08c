package chaos

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/metal-ccm/metal-ccm/test/framework"
)

// slowLease lets a leader ride out an API server restart: it renews every
// 2s and gives up only after 110s without the API server (the restart may
// take up to 100s on a loaded machine: 10s to stop, 90s to be ready). With upstream's
// defaults (15s, 10s, 2s) a leader whose API server is away longer than 10s
// exits, and another replica (or its restart) takes over, as
// TestChaosLeaderKill and TestChaosReplicaCutOff measure.
var slowLease = []string{"--leader-elect-lease-duration", "120s", "--leader-elect-renew-deadline", "110s",
	"--leader-elect-retry-period", "2s"}

// TestChaosAPIServerRestart restarts kube-apiserver in the middle of a
// Service storm, with two replicas: neither restarts, allocation goes on once
// the API server is back, nothing is re-assigned, and (with the router lab)
// a client requesting a VIP loses nothing.
func TestChaosAPIServerRestart(t *testing.T) {
	ns := "chaos-apiserver"
	ctx, rs, tr := setup(t, ns, 2, "  - {name: default, addresses: [198.18.60.0/22]}\n", slowLease)
	pids := []int{rs.proc(0).PID(), rs.proc(1).PID()}
	res := result{fault: "kube-apiserver restart during a Service storm", requests: -1,
		scale: fmt.Sprintf("%d Services, 2 replicas", prof.apiServices)}
	loop := vipLoop(ctx, t, ns, tr, 2)
	period := time.Duration(prof.apiRestarts+1) * 10 * time.Second
	st := startStorm(ctx, ns, "a", prof.apiServices, period)
	for range prof.apiRestarts {
		time.Sleep(period / time.Duration(prof.apiRestarts+1))
		res.injected++
		times, err := cp.RestartAPIServer(ctx, framework.RestartOptions{})
		if err != nil {
			t.Fatalf("restart kube-apiserver: %v", err)
		}
		// Recovered: a Service gets its first address after the restart.
		before := tr.assignedCount()
		rctx, rcancel := context.WithTimeout(ctx, 2*time.Minute)
		err = tr.waitAssigned(rctx, before+1)
		rcancel()
		if err != nil {
			t.Errorf("no allocation after the API server came back: %v", err)
			continue
		}
		took := time.Since(times.Ready)
		res.recovery = append(res.recovery, took)
		res.survived++
		t.Logf("kube-apiserver down for %s; the next address given %s after it was ready; %d of %d Services created",
			times.Ready.Sub(times.Stopped).Round(time.Millisecond), took.Round(time.Millisecond), st.created.Load(), prof.apiServices)
	}
	want := afterStorm(ctx, t, st, tr, prof.apiServices)
	for i, pid := range pids {
		if c := rs.proc(i); c.Exited() || c.PID() != pid {
			t.Errorf("replica %d restarted or exited", i)
			res.survived = 0
		}
	}
	endLoop(t, loop, &res)
	res.note = "no replica restarted"
	checkFinal(ctx, t, tr, ns, want, &res)
	record(res)
}
