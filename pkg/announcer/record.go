package announcer

import (
	"context"
	"net/netip"
	"sync"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/community"
)

// Recorder is a Backend that remembers what it passed on: the next hops of
// every prefix, as its inner backend took them. The leader reads it to show
// on each Service which nodes carry its addresses (pkg/svcstatus), and is
// told when something changed.
type Recorder struct {
	next Backend

	mu      sync.RWMutex
	applied map[netip.Prefix][]netip.Addr // the lists are never modified once made
	changed chan struct{}                 // coalescing
}

// Record wraps next (nil: a backend that takes everything and sends
// nothing, for a replica that only needs to know what the node agents
// announce).
func Record(next Backend) *Recorder {
	return &Recorder{next: next, applied: map[netip.Prefix][]netip.Addr{}, changed: make(chan struct{}, 1)}
}

// SetPaths passes the next hops on and remembers them once they are taken.
func (r *Recorder) SetPaths(ctx context.Context, prefix netip.Prefix, nextHops []netip.Addr) error {
	if r.next != nil {
		if err := r.next.SetPaths(ctx, prefix, nextHops); err != nil {
			return err
		}
	}
	r.mu.Lock()
	if len(nextHops) == 0 {
		delete(r.applied, prefix)
	} else {
		r.applied[prefix] = nextHops
	}
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
	return nil
}

// SetCommunities passes the communities on when the inner backend takes
// them.
func (r *Recorder) SetCommunities(ctx context.Context, prefix netip.Prefix, c community.Set) error {
	if cb, ok := r.next.(CommunityBackend); ok {
		return cb.SetCommunities(ctx, prefix, c)
	}
	return nil
}

// SetWeights passes the weights on when the inner backend takes them.
func (r *Recorder) SetWeights(ctx context.Context, prefix netip.Prefix, weights map[netip.Addr]int) error {
	if wb, ok := r.next.(WeightBackend); ok {
		return wb.SetWeights(ctx, prefix, weights)
	}
	return nil
}

// NextHops are the next hops prefix was last given (nil: not announced).
// The caller must not modify the list.
func (r *Recorder) NextHops(prefix netip.Prefix) []netip.Addr {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.applied[prefix]
}

// Changed receives a value after some SetPaths (several coalesce into one).
func (r *Recorder) Changed() <-chan struct{} { return r.changed }
