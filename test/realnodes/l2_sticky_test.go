package realnodes

import (
	"bytes"
	"context"
	"errors"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// stickyFailback sets l2.failback Sticky (the agents restarted together,
// as a restart-only change restarts them), kills the agent that answers
// for vip, starts a 30 s download and a request loop through the node
// that takes over, restarts the killed agent once the takeover is held,
// and checks that the address stays where it is: the client still
// resolves it to the node that took over, the CCM shows that node, no
// request fails and the download completes.
func stickyFailback(t *testing.T, lab *netlab.L2Cluster, ns string, vip netip.Addr) {
	path := lab.CloudConfig()
	old, err := os.ReadFile(path) //nolint:gosec // the lab's own config file
	if err != nil {
		t.Fatal(err)
	}
	sticky := strings.Replace(string(old), "\nl2:\n", "\nl2:\n  failback: Sticky\n", 1)
	if sticky == string(old) {
		t.Fatalf("no l2 section in %s", path)
	}
	if err := os.WriteFile(path, []byte(sticky), 0o600); err != nil { //nolint:gosec // the lab's own config file
		t.Fatal(err)
	}
	all := []int{0, 1, 2}
	for _, i := range all {
		lab.Agents[i].Stop(5 * time.Second)
	}
	for _, i := range all {
		if err := lab.Agents[i].Restart(); err != nil {
			t.Fatal(err)
		}
	}
	lab.WaitMembers(t, len(all), time.Minute)
	// Every agent ready (its node's kube-proxy checked) and the agents'
	// views settled: the address with its owner by hashing, as nobody has
	// held it for holdAfter yet.
	for _, i := range all {
		if err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			return lab.AgentReady(ctx, i), nil
		}); err != nil {
			t.Fatalf("the agent of %s is not ready after the restart: %v", lab.RealNodes[i].Name, err)
		}
	}
	owner := netlab.L2Owner(vip, all)
	waitL2Annotation(t, ns, "echo", map[netip.Addr]string{vip: lab.RealNodes[owner].Name})
	// Agents that start together see each other one by one: one that sees
	// a majority before it sees the owner (or the owner's kube-proxy
	// checked) answers for vip until it does, and the client may keep its
	// MAC from that while. Once every agent sees them all and only the
	// owner answers, the client asks again.
	for _, i := range all {
		lab.WaitAgentMembers(t, i, len(all), 30*time.Second)
	}
	if err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		for _, i := range all {
			if answersNow(lab.Agents[i].Log(), vip) != (i == owner) {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		t.Fatalf("after the restart, the agents' logs do not settle on %s alone answering for %s: %v", lab.RealNodes[owner].Name, vip, err)
	}
	if err := lab.FlushClientNeighbors(); err != nil {
		t.Fatal(err)
	}
	lab.WaitMAC(t, vip, owner, 30*time.Second)
	if now := answering(t, lab, vip); now != owner {
		t.Fatalf("%s answered by %s, want %s", vip, lab.RealNodes[now].Name, lab.RealNodes[owner].Name)
	}
	next := netlab.L2Owner(vip, slices.DeleteFunc(slices.Clone(all), func(i int) bool { return i == owner }))
	t.Logf("with Sticky, %s answers for %s; %s would take it over", lab.RealNodes[owner].Name, vip, lab.RealNodes[next].Name)

	holding := func() int { return holdLines(lab.Agents[next].Log(), vip) }
	held := holding()
	lab.Agents[owner].Kill()
	lab.WaitMAC(t, vip, next, 10*time.Second)
	takeover := time.Now()
	lab.WaitAnswers(t, vip)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	download := make(chan error, 1)
	go func() {
		body, err := lab.ClientGet(ctx, netlab.VIPURL(vip)+"slow?seconds=30")
		if err == nil && !strings.HasSuffix(body, "done\n") {
			err = errors.New("the answer ends before \"done\"")
		}
		download <- err
	}()
	loop := lab.StartFailoverLoop(vip)
	// The old owner comes back once the new one holds the address (it has
	// answered for holdAfter, 10 s, and says so in its log and its
	// membership metadata), and the metadata has had a moment to spread.
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return holding() > held, nil
	}); err != nil {
		t.Fatalf("the agent of %s never held %s: %v", lab.RealNodes[next].Name, vip, err)
	}
	time.Sleep(time.Second)
	back := time.Now()
	if err := lab.Agents[owner].Restart(); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return lab.AgentReady(ctx, owner), nil
	}); err != nil {
		t.Fatalf("the agent of %s is not ready again: %v", lab.RealNodes[owner].Name, err)
	}
	lab.WaitMembers(t, len(all), 30*time.Second)
	res := loop.StopAfter(3 * time.Second)
	if n := res.Failed(takeover); n != 0 {
		t.Errorf("%d of %d requests failed after the takeover, the agent of %s back meanwhile (first: %v)", n, len(res), lab.RealNodes[owner].Name, res.FirstError())
	}
	if now := answering(t, lab, vip); now != next {
		t.Errorf("%s moved to %s when the agent of %s came back, want it left with %s", vip, lab.RealNodes[now].Name, lab.RealNodes[owner].Name, lab.RealNodes[next].Name)
	}
	waitL2Annotation(t, ns, "echo", map[netip.Addr]string{vip: lab.RealNodes[next].Name})
	select {
	case err := <-download:
		if err != nil {
			t.Errorf("the download through %s, started before the agent of %s came back: %v", lab.RealNodes[next].Name, lab.RealNodes[owner].Name, err)
		}
	case <-ctx.Done():
		t.Errorf("the download through %s did not end", lab.RealNodes[next].Name)
	}
	t.Logf("the agent of %s back %s after the takeover: %s still answers for %s; %d requests, none failed after; the 30 s download completed",
		lab.RealNodes[owner].Name, back.Sub(takeover).Round(time.Millisecond), lab.RealNodes[next].Name, vip, len(res))
}

// holdLines counts the lines of an agent's log that say it holds vip.
func holdLines(log string, vip netip.Addr) int {
	n := 0
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "Holding the address") && strings.Contains(l, `address="`+vip.String()+`"`) {
			n++
		}
	}
	return n
}

// answersNow reports whether an agent's log says that its running process
// answers for vip: its last decision on vip since it last started.
func answersNow(log string, vip netip.Addr) bool {
	if i := strings.LastIndex(log, `"Starting" version=`); i >= 0 {
		log = log[i:]
	}
	on := false
	for _, l := range strings.Split(log, "\n") {
		if !strings.Contains(l, `address="`+vip.String()+`"`) {
			continue
		}
		switch {
		case strings.Contains(l, `"Answering for the address"`):
			on = true
		case strings.Contains(l, `"No longer answering for the address"`):
			on = false
		}
	}
	return on
}

// answering is the node (by index) whose MAC the client resolves vip to,
// once it answers the client.
func answering(t *testing.T, lab *netlab.L2Cluster, vip netip.Addr) int {
	t.Helper()
	lab.WaitAnswers(t, vip)
	mac, _, _, err := lab.ClientNeighbor(vip)
	if err != nil {
		t.Fatal(err)
	}
	for i := range lab.RealNodes {
		if m, err := lab.NodeMAC(i); err == nil && bytes.Equal(m, mac) {
			return i
		}
	}
	t.Fatalf("the client resolves %s to %v, no node's MAC", vip, mac)
	return -1
}
