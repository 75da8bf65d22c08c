package l2

import (
	"bytes"
	"context"
	"net"
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
// for the responder (Options.Peer).
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
	sent    *member.Fitness // the last gossiped
	macsErr string          // the last error of macs, logged once

	peers atomic.Pointer[[]net.HardwareAddr] // the bound members' MACs, this node's included
	count atomic.Int64                       // the responder's conflicts, for the metric
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
	for _, f := range found {
		if len(held) == member.MaxConflicts {
			// This node answers none of them all the same; another node
			// that takes one over finds the conflict in its turn.
			logger.Info("More address conflicts than the membership carries: reporting the first ones", "conflicts", len(found), "reported", member.MaxConflicts)
			break
		}
		held = append(held, member.Conflict{Addr: f.Addr, MAC: f.MAC})
	}
	macs, err := c.macs()
	c.mu.Lock()
	defer c.mu.Unlock()
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

func (c *conflicts) gossipLocked() error {
	next := c.fitness
	next.MACs, next.Conflicts = c.mine, c.held
	if c.sent != nil && next.Equal(*c.sent) {
		return nil
	}
	// Sent even when the broadcast fails: the membership carries the new
	// metadata at its next round all the same.
	c.sent = &next
	return c.set(next)
}

// setPeers records the MACs the bound members gossip.
func (c *conflicts) setPeers(macs []net.HardwareAddr) { c.peers.Store(&macs) }

// isPeer reports whether mac is a bound member's (Options.Peer).
func (c *conflicts) isPeer(mac net.HardwareAddr) bool {
	p := c.peers.Load()
	return p != nil && slices.ContainsFunc(*p, func(m net.HardwareAddr) bool { return bytes.Equal(m, mac) })
}
