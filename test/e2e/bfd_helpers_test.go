package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// agentBFDWait bounds how long an agent's BFD session may take to be up
// after its router's: the router is Up once it has the agent's Init, the
// agent once it has the router's next packet.
const agentBFDWait = 10 * time.Second

// checkAgentBFDUp fails the test unless the agent in node namespace ns
// says in its metrics, within agentBFDWait, that its BFD session with
// peer (as the metrics name it: the router's address, zoned on a
// link-local session) is up.
func checkAgentBFDUp(t *testing.T, ls *netlab.LeafSpine, ns, node, peer string) {
	t.Helper()
	want := fmt.Sprintf("metal_ccm_agent_bgp_bfd_session_up{peer=%q} 1", peer)
	for deadline := time.Now().Add(agentBFDWait); ; time.Sleep(200 * time.Millisecond) {
		out, err := ls.Exec(ns, "curl", "-sS", "--max-time", "5", "http://127.0.0.1:10263/metrics")
		if err == nil && strings.Contains(out, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("agent of %s: /metrics lacks %q after %s (%v)", node, want, agentBFDWait, err)
			return
		}
	}
}

// bfdFailNode makes node i of rack r fail as only BFD sees it within the
// hold time: its agent a frozen (no BFD packets, while the node's kernel
// keeps the TCP sessions open), and with linkDown its link taken down at
// the ToR's end first (a power-off; on a numbered rack the ToR's side of
// it is a bridge port, and the bridge stays up). It returns how long the
// node's path of p took to leave its ToR's kernel, whose route for p then
// has the next hops rest, and fails the test past bfdWithdrawBound.
// restore undoes it (and runs at cleanup too).
func bfdFailNode(t *testing.T, ls *netlab.LeafSpine, a *agent, r, i int, p netip.Prefix, rest []netip.Addr, linkDown bool) (time.Duration, func()) {
	t.Helper()
	if linkDown {
		if err := ls.SetNodeLink(r, i, false); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	if err := syscall.Kill(a.PID(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	restore := func() {
		once.Do(func() {
			if err := syscall.Kill(a.PID(), syscall.SIGCONT); err != nil {
				t.Errorf("resume agent of rack %d node %d: %v", r, i, err)
			}
			if linkDown {
				if err := ls.SetNodeLink(r, i, true); err != nil {
					t.Errorf("link of rack %d node %d up: %v", r, i, err)
				}
			}
		})
	}
	t.Cleanup(restore)
	ctx, cancel := context.WithTimeout(context.Background(), bfdWithdrawBound)
	defer cancel()
	err := ls.WaitRoute(ctx, ls.Tors[r], p, rest)
	took := time.Since(start)
	if err != nil {
		bfd, _ := ls.BFDStates(ls.Tors[r])
		t.Fatalf("rack %d node %d's path stays at its ToR past %s (hold time %s): %v; BFD %v", r, i, bfdWithdrawBound, leafSpineHoldTime, err, bfd)
	}
	return took, restore
}
