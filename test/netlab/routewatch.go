package netlab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// RouteWatch follows the IPv4 routes of a network namespace's main table
// within a prefix as the kernel reports them: a netlink subscription to the
// namespace's route changes, no polling. It keeps, per destination, the
// next hops of its route and the moment the change that gave them arrived,
// so that a wait ends with the time of the change itself.
//
// Only IPv4: the kernel reports an IPv4 multipath route whole in each
// message, an IPv6 one possibly a next hop at a time.
type RouteWatch struct {
	ns     string
	within netip.Prefix
	done   chan struct{}

	mu sync.Mutex
	// routes holds each route by destination and metric (a destination can
	// have routes of several metrics; the lowest is the one used).
	routes map[routeKey][]netip.Addr
	// used is, per destination, the next hops of the route in use (none:
	// no route) and when that last changed.
	used map[netip.Prefix]usedRoute
	// changed is closed, and replaced, at each change.
	changed chan struct{}
	err     error
	closed  bool
}

type routeKey struct {
	dst      netip.Prefix
	priority int
}

type usedRoute struct {
	hops []netip.Addr
	at   time.Time
}

// WatchRoutes starts watching the routes within prefix (IPv4) of network
// namespace ns (a name under /run/netns). Only changes from now on are
// seen. Close it when done.
func WatchRoutes(ns string, within netip.Prefix) (*RouteWatch, error) {
	if !within.Addr().Is4() {
		return nil, fmt.Errorf("netlab route watch: %s is not IPv4", within)
	}
	h, err := netns.GetFromName(ns)
	if err != nil {
		return nil, fmt.Errorf("netlab route watch %s: %w", ns, err)
	}
	defer func() { _ = h.Close() }() // the socket stays in ns
	w := &RouteWatch{
		ns: ns, within: within.Masked(), done: make(chan struct{}),
		routes: map[routeKey][]netip.Addr{}, used: map[netip.Prefix]usedRoute{}, changed: make(chan struct{}),
	}
	updates := make(chan netlink.RouteUpdate, 256)
	err = netlink.RouteSubscribeWithOptions(updates, w.done, netlink.RouteSubscribeOptions{
		Namespace:         &h,
		ErrorCallback:     w.fail,
		ReceiveBufferSize: 1 << 20,
	})
	if err != nil {
		return nil, fmt.Errorf("netlab route watch %s: %w", ns, err)
	}
	go w.read(updates)
	return w, nil
}

// fail records the subscription's first error, unless the watch is closing
// (closing the socket ends its reader with an error too).
func (w *RouteWatch) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed && w.err == nil {
		w.err = fmt.Errorf("netlab route watch %s: %w", w.ns, err)
		w.wake()
	}
}

// wake tells the waiters that something changed; w.mu is held.
func (w *RouteWatch) wake() {
	close(w.changed)
	w.changed = make(chan struct{})
}

func (w *RouteWatch) read(updates <-chan netlink.RouteUpdate) {
	for u := range updates {
		w.apply(u, time.Now())
	}
	w.fail(errors.New("the subscription ended"))
}

// apply takes in one route message that arrived at t.
func (w *RouteWatch) apply(u netlink.RouteUpdate, t time.Time) {
	dst, ok := ipv4Prefix(u.Dst)
	if !ok || u.Table != unix.RT_TABLE_MAIN || u.Route.Type != unix.RTN_UNICAST || !w.within.Contains(dst.Addr()) || dst.Bits() < w.within.Bits() {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	k := routeKey{dst: dst, priority: u.Priority}
	switch u.Type {
	case unix.RTM_NEWROUTE:
		w.routes[k] = nextHops(u.Route)
	case unix.RTM_DELROUTE:
		delete(w.routes, k)
	default:
		return
	}
	// The route in use is the one of the lowest metric; nil hops: none.
	var hops []netip.Addr
	best := -1
	for rk, h := range w.routes {
		if rk.dst == dst && (best < 0 || rk.priority < best) {
			best, hops = rk.priority, h
			if hops == nil {
				hops = []netip.Addr{} // a route without a gateway is a route
			}
		}
	}
	if old, seen := w.used[dst]; seen && slices.Equal(old.hops, hops) && (old.hops == nil) == (hops == nil) {
		return
	}
	w.used[dst] = usedRoute{hops: hops, at: t}
	w.wake()
}

// ipv4Prefix reads a route's destination (nil: the default route).
func ipv4Prefix(n *net.IPNet) (netip.Prefix, bool) {
	if n == nil {
		return netip.Prefix{}, false
	}
	a, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	a = a.Unmap()
	ones, _ := n.Mask.Size()
	if !a.Is4() {
		return netip.Prefix{}, false
	}
	return netip.PrefixFrom(a, ones), true
}

// nextHops are a route's gateways, sorted.
func nextHops(r netlink.Route) []netip.Addr {
	var out []netip.Addr
	add := func(ip net.IP) {
		if a, ok := netip.AddrFromSlice(ip); ok {
			out = append(out, a.Unmap())
		}
	}
	if r.Gw != nil {
		add(r.Gw)
	}
	for _, nh := range r.MultiPath {
		if nh != nil && nh.Gw != nil {
			add(nh.Gw)
		}
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return out
}

// Wait waits until the route of prefix has exactly the wanted next hops
// (in any order; none: until there is no route) and returns when the
// change that made it so arrived. With none wanted and no route of prefix
// ever seen, it returns the zero time at once.
func (w *RouteWatch) Wait(ctx context.Context, prefix netip.Prefix, want []netip.Addr) (time.Time, error) {
	want = slices.Clone(want)
	slices.SortFunc(want, netip.Addr.Compare)
	prefix = prefix.Masked()
	for {
		w.mu.Lock()
		u, seen := w.used[prefix]
		changed, err := w.changed, w.err
		w.mu.Unlock()
		switch {
		case len(want) == 0 && !seen:
			return time.Time{}, nil
		case len(want) == 0 && u.hops == nil, len(want) > 0 && slices.Equal(u.hops, want):
			return u.at, nil
		case err != nil:
			return time.Time{}, err
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("netlab route watch %s: route %s via %v: %w; has %v", w.ns, prefix, want, ctx.Err(), u.hops)
		case <-changed:
		}
	}
}

// WaitSettled is Wait, then waits until the route of prefix has not
// changed for quiet, and starts over if it has: it returns the time of the
// last change, which a passing state does not cut short (a route that
// goes, comes back by another path and goes again).
func (w *RouteWatch) WaitSettled(ctx context.Context, prefix netip.Prefix, want []netip.Addr, quiet time.Duration) (time.Time, error) {
	for {
		at, err := w.Wait(ctx, prefix, want)
		if err != nil {
			return at, err
		}
		t := time.NewTimer(time.Until(at.Add(quiet)))
		select {
		case <-ctx.Done():
			t.Stop()
			return time.Time{}, fmt.Errorf("netlab route watch %s: route %s settled: %w", w.ns, prefix, ctx.Err())
		case <-t.C:
		}
		if w.ChangedAt(prefix).Equal(at) {
			return at, nil
		}
	}
}

// ChangedAt is when the route of prefix last changed (appeared, changed
// next hops or went), or the zero time if the watch never saw one.
func (w *RouteWatch) ChangedAt(prefix netip.Prefix) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.used[prefix.Masked()].at
}

// NextHops are the next hops of prefix's route as last reported, and
// whether there is a route.
func (w *RouteWatch) NextHops(prefix netip.Prefix) ([]netip.Addr, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	u := w.used[prefix.Masked()]
	return slices.Clone(u.hops), u.hops != nil
}

// Close ends the subscription: it closes the socket, and the reader ends
// at the namespace's next route message (a blocked receive does not see
// the close). Safe to call more than once.
func (w *RouteWatch) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.closed = true
		close(w.done)
	}
}
