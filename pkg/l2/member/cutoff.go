package member

import (
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

// reachTargets is how many other agents a member pings each probe interval
// to know whether it still reaches any: one would be enough in a cluster
// without faults, three keep a member that just lost one or two peers (not
// yet declared dead) from taking itself for cut off.
const reachTargets = 3

// watchReach tells whether this member is cut off from the other agents,
// until done closes: every probe interval it pings up to reachTargets other
// agents the membership shows alive, picked at random, and when none has
// answered for the isolation timeout it takes itself for cut off (Alive
// then shows it alone) until one answers again.
//
// Why not leave it to the membership: an agent cut off from the others
// learns that the others are dead one by one, each after its own probe
// (one per probe interval, round robin) and the suspicion timeout, so it
// sees itself in a minority only after about half the cluster's probes:
// ~1.2 s at 3 agents, ~4 s at 30, while the others declare it dead
// within the same ~1-1.5 s at any size. Both answer meanwhile. Reaching no
// other agent at all is a verdict that takes the same time at any size.
// The pings are the membership's own (memberlist.Ping: keyed, answered
// only by the member named), so a process without the key cannot keep a
// cut-off member believing it is reached.
func (m *Members) watchReach(interval, isolation time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	last := time.Now()
	for {
		select {
		case <-m.done:
			return
		case <-tick.C:
		}
		targets := m.reachTargets()
		if len(targets) == 0 {
			// Alone in the membership: nothing to be cut off from (the
			// majority rule counts the others as missing already).
			last = time.Now()
		} else if m.pingAny(targets) {
			last = time.Now()
		}
		cut := time.Since(last) > isolation
		if cut != m.cut.Swap(cut) {
			if cut {
				m.logger.Info("Reaching none of the other L2 agents: taking this one for cut off", "for", time.Since(last).Round(time.Millisecond))
			} else {
				m.logger.Info("Reaching the other L2 agents again")
			}
			m.notify()
		}
	}
}

// reachTargets are up to reachTargets other agents alive in the
// membership, at random.
func (m *Members) reachTargets() []*memberlist.Node {
	self := m.ml.LocalNode().Name
	var agents []*memberlist.Node
	for _, n := range m.ml.Members() {
		if md, err := decodeMeta(n.Meta); err == nil && md.role == roleAgent && n.Name != self {
			agents = append(agents, n)
		}
	}
	rand.Shuffle(len(agents), func(i, j int) { agents[i], agents[j] = agents[j], agents[i] }) //nolint:gosec // spreading pings, not a secret
	return agents[:min(len(agents), reachTargets)]
}

// pingAny pings targets at once and reports whether any answered (each
// ping waits up to the probe timeout).
func (m *Members) pingAny(targets []*memberlist.Node) bool {
	var answered atomic.Bool
	var wg sync.WaitGroup
	for _, n := range targets {
		wg.Go(func() {
			if _, err := m.ml.Ping(n.Name, &net.UDPAddr{IP: n.Addr, Port: int(n.Port)}); err == nil {
				answered.Store(true)
			}
		})
	}
	wg.Wait()
	return answered.Load()
}

// CutOff reports whether this member reaches none of the other agents
// (watchReach); always false for an observer.
func (m *Members) CutOff() bool { return m.cut.Load() }
