package chaos

import (
	"fmt"
	"testing"
	"time"

	"github.com/metal-ccm/metal-ccm/pkg/agent"
)

const l2StaleFault = "L2: the answering node's agent cut off from the API server (its view stale), the rest of the node untouched"

// l2StaleBound is how long a stale agent may keep its addresses: the
// lab's agents find the hung connection within ~4 s (netlab's HTTP/2
// health-check settings) and their watches end with an error, the view
// turns stale agent.StaleAfter later, the agent's fitness is looked at
// again within 5 s, then the failover.
var l2StaleBound = agent.StaleAfter + 15*time.Second

// stale cuts the owner's agent from the API server (its relay's traffic
// dropped; its kubelet and kube-proxy keep theirs) under a request loop:
// the next node must take the address over once the view is stale (the
// time from the cut, in res.recovery), without a request lost, since the
// owner forwards all along; then the cut is healed and the owner must
// answer again.
func (f l2Fault) stale(t *testing.T, res *result) {
	t.Helper()
	loop := f.c.StartFailoverLoop(f.vip)
	cut := time.Now()
	undo, err := f.c.CutAgentFromAPI(f.owner)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = undo() }()
	took := f.c.WaitMAC(t, f.vip, f.next, l2StaleBound+30*time.Second)
	reqs := loop.StopAfter(time.Second)
	res.injected++
	res.requests += len(reqs)
	res.lost += reqs.Failed(cut)
	res.recovery = append(res.recovery, took)
	if took <= l2StaleBound && reqs.Failed(cut) == 0 {
		res.survived++
	}
	t.Logf("%s (%s): %s answers after %s; lost %d of %d (%v)", res.fault, f.vip, f.c.RealNodes[f.next].Name,
		took.Round(time.Millisecond), reqs.Failed(cut), len(reqs), reqs.FirstError())
	if err := undo(); err != nil {
		t.Fatal(err)
	}
	f.c.WaitMAC(t, f.vip, f.owner, 30*time.Second)
	f.c.WaitAnswers(t, f.vip)
}

// staleNote is the row's note.
var staleNote = fmt.Sprintf("recovery: the cut to the next node answering (bound %s: the hung connection found, %s stale, the next look at the fitness); requests lost: none expected, the owner forwards all along", l2StaleBound, agent.StaleAfter)
