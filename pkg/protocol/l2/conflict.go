package l2

import (
	"bytes"
	"context"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"

	l2resp "github.com/metal-ccm/metal-ccm/pkg/l2"
	"github.com/metal-ccm/metal-ccm/pkg/l2/member"
)

// conflictSource is the responder as the gossip of its conflicts reads it.
type conflictSource interface {
	Conflicts() []l2resp.Conflict
	ConflictsChanged() <-chan struct{}
}

// conflicts carries the address conflicts this agent's responder finds to
// the other agents and the CCM, in its membership metadata: an agent may
// write nothing to the API server, so the leader learns of them there, and
// every agent's election gives an address in conflict no owner (else
// another node would take it over and meet the foreign host again). With
// them go this node's answering MACs, so that the others tell a claim of
// this node's from a foreign host's. It also keeps the other nodes' MACs
// for the responder (Options.Peer), those of recently gone nodes too.
type conflicts struct {
	source conflictSource // set once the responder is built
	// macs are this node's answering interfaces' MACs now.
	macs func() ([]net.HardwareAddr, error)
	// set gossips the metadata's fitness.
	set func(member.Fitness) error

	mu      sync.Mutex
	fitness member.Fitness // the last from fitness.go, without the fields below
	mine    []net.HardwareAddr
	held    []member.Conflict
	holds   []netip.Addr    // the addresses it answers for, with l2.failback Sticky
	sent    *member.Fitness // the last gossiped
	macsErr string          // the last error of macs, logged once
	over    bool            // more conflicts than reported, logged once

	peersMu sync.Mutex
	seen    map[string]time.Time               // MAC -> when last gossiped by a bound member
	peers   atomic.Pointer[[]net.HardwareAddr] // the MACs of seen, for isPeer
	count   atomic.Int64                       // the responder's conflicts, for the metric
}

func newConflicts(macs func() ([]net.HardwareAddr, error), set func(member.Fitness) error) *conflicts {
	return &conflicts{macs: macs, set: set}
}

// Run gossips the conflicts as they change, and the MACs every
// reachEvery, until ctx ends.
func (c *conflicts) Run(ctx context.Context) {
	tick := time.NewTicker(reachEvery)
	defer tick.Stop()
	for {
		c.update(ctx)
		select {
		case <-ctx.Done():
			return
		case <-c.source.ConflictsChanged():
		case <-tick.C:
		}
	}
}

func (c *conflicts) update(ctx context.Context) {
	logger := klog.FromContext(ctx)
	found := c.source.Conflicts()
	c.count.Store(int64(len(found)))
	held := make([]member.Conflict, 0, min(len(found), member.MaxConflicts))
	for _, f := range found[:min(len(found), member.MaxConflicts)] {
		held = append(held, member.Conflict{Addr: f.Addr, MAC: f.MAC})
	}
	macs, err := c.macs()
	c.mu.Lock()
	defer c.mu.Unlock()
	if over := len(found) > member.MaxConflicts; over != c.over {
		c.over = over
		if over {
			// This node answers none of them all the same; another node
			// that takes one over finds the conflict in its turn.
			logger.Info("More address conflicts than the membership carries: reporting the first ones", "conflicts", len(found), "reported", member.MaxConflicts)
		}
	}
	if msg := errString(err); msg != c.macsErr {
		c.macsErr = msg
		if err != nil {
			logger.Error(err, "Cannot list this node's MACs; the others keep the last ones it told")
		}
	}
	if err == nil {
		c.mine = macs
	}
	c.held = held
	if err := c.gossipLocked(); err != nil {
		logger.V(2).Info("Gossiping this node's address conflicts", "err", err)
	}
}

// setFitness is fitness.go's way to the membership: its fitness, with the
// MACs and conflicts added.
func (c *conflicts) setFitness(f member.Fitness) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fitness = f
	return c.gossipLocked()
}

// setHolds is the agent's way to the membership with l2.failback Sticky:
// the addresses it answers for (sorted).
func (c *conflicts) setHolds(addrs []netip.Addr) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.holds = addrs
	return c.gossipLocked()
}

func (c *conflicts) gossipLocked() error {
	next := c.fitness
	next.MACs, next.Conflicts, next.Holds = c.mine, c.held, c.holds
	if c.sent != nil && next.Equal(*c.sent) {
		return nil
	}
	// Sent even when the broadcast fails: the membership carries the new
	// metadata at its next round all the same.
	c.sent = &next
	return c.set(next)
}

// peerMemory is how long a node's MACs stay the cluster's after its agent
// was last seen bound. A member that has just been declared dead, or cut
// off, is the very one that may still answer for the address another node
// takes over from it (until it sees itself alone): its answer to the new
// owner's probe is the cluster's double answer, not a foreign host's.
const peerMemory = 10 * time.Minute

// setPeers records the MACs the bound members gossip now, and keeps those
// seen within peerMemory.
func (c *conflicts) setPeers(macs []net.HardwareAddr, now time.Time) {
	c.peersMu.Lock()
	defer c.peersMu.Unlock()
	if c.seen == nil {
		c.seen = map[string]time.Time{}
	}
	for _, m := range macs {
		c.seen[string(m)] = now
	}
	out := make([]net.HardwareAddr, 0, len(c.seen))
	for m, at := range c.seen {
		if now.Sub(at) > peerMemory {
			delete(c.seen, m)
			continue
		}
		out = append(out, net.HardwareAddr(m))
	}
	c.peers.Store(&out)
}

// isPeer reports whether mac is a bound member's (Options.Peer).
func (c *conflicts) isPeer(mac net.HardwareAddr) bool {
	p := c.peers.Load()
	return p != nil && slices.ContainsFunc(*p, func(m net.HardwareAddr) bool { return bytes.Equal(m, mac) })
}
