package elect

import (
	"context"
	"maps"
	"net/netip"
	"slices"
	"sync"
)

// Candidates are each L2 address's eligible nodes, as an announcer decides
// them: it is the announcer's Backend (SetPaths), and the deciders read it
// (Snapshot) when it tells them of a change.
type Candidates struct {
	mu      sync.Mutex
	m       map[netip.Prefix][]netip.Addr
	version uint64 // counts the SetPaths
	changed chan struct{}
}

// NewCandidates is an empty set.
func NewCandidates() *Candidates {
	return &Candidates{m: map[netip.Prefix][]netip.Addr{}, changed: make(chan struct{}, 1)}
}

// SetPaths records prefix's eligible nodes, as next-hop addresses (none:
// the address is gone).
func (c *Candidates) SetPaths(_ context.Context, prefix netip.Prefix, nextHops []netip.Addr) error {
	c.mu.Lock()
	if len(nextHops) == 0 {
		delete(c.m, prefix)
	} else {
		c.m[prefix] = slices.Clone(nextHops)
	}
	c.version++
	c.mu.Unlock()
	select {
	case c.changed <- struct{}{}:
	default:
	}
	return nil
}

// Snapshot is a copy of the set (the lists are shared: never modified),
// and its version, which every SetPaths changes.
func (c *Candidates) Snapshot() (map[netip.Prefix][]netip.Addr, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.m), c.version
}

// Version is the version Snapshot would return now.
func (c *Candidates) Version() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version
}

// Changed is told, coalesced, of every SetPaths.
func (c *Candidates) Changed() <-chan struct{} { return c.changed }
