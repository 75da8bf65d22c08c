package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// stormPool holds the storm's addresses (1024).
const stormPool = "  - {name: default, addresses: [198.18.48.0/22]}\n"

// TestChaosLeaderKill kills the leading replica of three with SIGKILL again
// and again while Services are created, and starts it again each time, as
// its Deployment would. At the end every Service has an address, no address
// is held twice, no Service's address changed once given, and (with the
// router lab) a client requesting a VIP throughout lost no request.
func TestChaosLeaderKill(t *testing.T) {
	ns := "chaos-kill"
	ctx, rs, tr := setup(t, ns, 3, stormPool, fastLease)
	res := result{fault: "SIGKILL of the leader during a Service storm", requests: -1,
		scale: fmt.Sprintf("%d Services, 3 replicas", prof.stormServices)}
	loop := vipLoop(ctx, t, ns, tr, 3)

	// The storm runs while the leader is killed, about every 7s (1 to 4s
	// after a leader is seen, plus the takeover).
	st := startStorm(ctx, ns, "s", prof.stormServices, time.Duration(prof.kills)*7*time.Second)
	during := 0
	for k := range prof.kills {
		if int(st.created.Load()) < prof.stormServices {
			during++
		}
		time.Sleep(time.Duration(1000+rand.IntN(3000)) * time.Millisecond) //nolint:gosec // jitter, not security
		took, err := killLeader(ctx, t, rs, tr)
		if err != nil {
			t.Errorf("kill %d: %v", k+1, err)
		}
		res.tally(took, err)
	}
	want := afterStorm(ctx, t, st, tr, prof.stormServices)
	res.note = fmt.Sprintf("%d of the kills while Services were still being created", during)
	// A little more time for any late change to show.
	time.Sleep(2 * time.Second)
	endLoop(t, loop, &res)
	checkFinal(ctx, t, tr, ns, want, &res)
	record(res)
}

// killLeader waits for a leader, kills it with SIGKILL, starts it again, and
// returns how long the lease took to pass to another replica.
func killLeader(ctx context.Context, t *testing.T, rs *replicaSet, tr *tracker) (time.Duration, error) {
	t.Helper()
	lctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	i, err := rs.waitLeader(lctx)
	if err != nil {
		return 0, err
	}
	holder := rs.holder(lctx)
	victim := rs.proc(i)
	victim.Kill()
	killed := time.Now()
	taken := make(chan error, 1)
	var at time.Time
	go func() {
		var err error
		at, err = rs.waitHolderChange(lctx, holder)
		taken <- err
	}()
	if _, err := rs.start(i); err != nil {
		return 0, err
	}
	if err := <-taken; err != nil {
		return 0, err
	}
	took := at.Sub(killed)
	t.Logf("killed %s (lease holder %s); lease passed after %s; %d Services have addresses",
		victim.Name, holder[strings.LastIndex(holder, "_")+1:], took.Round(time.Millisecond), tr.assignedCount())
	return took, nil
}

// checkFinal checks every Service of ns against what the tracker saw: each
// has the address it was first given, and no address is held twice.
func checkFinal(ctx context.Context, t *testing.T, tr *tracker, ns string, want int, res *result) {
	t.Helper()
	l, err := client.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != want {
		t.Errorf("%d Services, want %d", len(l.Items), want)
	}
	held := map[string]string{}
	for _, s := range l.Items {
		var ips []string
		for _, in := range s.Status.LoadBalancer.Ingress {
			ips = append(ips, in.IP)
			if other, dup := held[in.IP]; dup {
				t.Errorf("%s and %s both hold %s", s.Name, other, in.IP)
				res.duplicates++
			}
			held[in.IP] = s.Name
		}
		got := strings.Join(ips, ",")
		if got == "" {
			t.Errorf("%s has no address", s.Name)
		} else if first := tr.firstIP(s.Name); first != got {
			t.Errorf("%s: address %s, first given %s", s.Name, got, first)
		}
	}
	_, changed, dups := tr.counts()
	res.changed = changed
	res.duplicates = max(res.duplicates, dups)
	if changed > 0 || dups > 0 {
		t.Errorf("seen during the run: %s", tr.problems())
	}
	res.pass = !t.Failed()
}
