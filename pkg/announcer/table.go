package announcer

import (
	"context"
	"net/netip"
	"slices"

	"k8s.io/klog/v2"
)

// source is a kind of contribution to the announced paths.
type source int

const (
	fromService  source = iota // a LoadBalancer Service's addresses (key: namespace/name)
	fromPodRoute               // a node's pod CIDRs (key: node name)
)

// owner is one contributor of paths: a Service or a node's pod routes.
type owner struct {
	source source
	key    string
}

// prefixHops are one prefix's next hops in a contribution.
type prefixHops struct {
	prefix netip.Prefix
	hops   []netip.Addr // sorted; never modified once made
}

// contribution is what one owner contributes: a slice, not a map, because
// an owner has one or two prefixes and the table holds one per Service
// (10,000 and more), where a small map costs several times the memory.
type contribution []prefixHops

// get is the next hops c contributes to p, and whether it has p.
func (c contribution) get(p netip.Prefix) ([]netip.Addr, bool) {
	for _, ph := range c {
		if ph.prefix == p {
			return ph.hops, true
		}
	}
	return nil, false
}

// with is c with hops as p's next hops (replacing those it had).
func (c contribution) with(p netip.Prefix, hops []netip.Addr) contribution {
	for i := range c {
		if c[i].prefix == p {
			c[i].hops = hops
			return c
		}
	}
	return append(c, prefixHops{p, hops})
}

// pathTable merges what every owner contributes into one set of next hops
// per prefix (two Services may share an address) and keeps the backend equal
// to it, sending only what changed. It is owned by the run loop.
type pathTable struct {
	contrib map[owner]contribution        // owner -> its prefixes and next hops
	owners  map[netip.Prefix][]owner      // prefix -> its owners (nearly always one)
	applied map[netip.Prefix][]netip.Addr // what the backend has
	retry   map[netip.Prefix]bool         // prefixes whose last change failed
}

func newPathTable() *pathTable {
	return &pathTable{
		contrib: map[owner]contribution{},
		owners:  map[netip.Prefix][]owner{},
		applied: map[netip.Prefix][]netip.Addr{},
		retry:   map[netip.Prefix]bool{},
	}
}

// set makes next the contribution of o (none: o contributes nothing) and
// marks every prefix it had or has in touched.
func (t *pathTable) set(o owner, next contribution, touched map[netip.Prefix]bool) {
	// A recomputed list equal to the one before (a node change recomputes
	// every Service) is replaced by that one, which the backend may hold:
	// one copy of each list, not one per recomputation.
	for i, ph := range next {
		if before, ok := t.contrib[o].get(ph.prefix); ok && slices.Equal(before, ph.hops) {
			next[i].hops = before
		}
	}
	for _, ph := range t.contrib[o] {
		touched[ph.prefix] = true
		if _, still := next.get(ph.prefix); !still {
			t.owners[ph.prefix] = slices.DeleteFunc(t.owners[ph.prefix], func(x owner) bool { return x == o })
		}
	}
	if len(next) == 0 {
		delete(t.contrib, o)
	} else {
		t.contrib[o] = next
	}
	for _, ph := range next {
		touched[ph.prefix] = true
		if !slices.Contains(t.owners[ph.prefix], o) {
			t.owners[ph.prefix] = append(t.owners[ph.prefix], o)
		}
	}
}

// keys are the keys of the owners of one source.
func (t *pathTable) keys(s source) []string {
	var out []string
	for o := range t.contrib {
		if o.source == s {
			out = append(out, o.key)
		}
	}
	return out
}

// apply sends the backend the touched prefixes (and those whose last change
// failed) whose next hops changed, and reports whether some failed again.
func (t *pathTable) apply(ctx context.Context, backend Backend, touched map[netip.Prefix]bool) bool {
	for p := range t.retry {
		touched[p] = true
	}
	t.retry = map[netip.Prefix]bool{}
	for p := range touched {
		want := t.wanted(p)
		if len(t.owners[p]) == 0 {
			delete(t.owners, p)
		}
		if slices.Equal(want, t.applied[p]) {
			continue
		}
		if err := backend.SetPaths(ctx, p, want); err != nil {
			klog.FromContext(ctx).Error(err, "Cannot announce; retrying", "prefix", p)
			t.retry[p] = true
			continue
		}
		if len(want) == 0 {
			delete(t.applied, p)
		} else {
			t.applied[p] = want
		}
	}
	return len(t.retry) > 0
}

// wanted is the union of the next hops the owners of p contribute, sorted.
// With one owner (the common case) it is that owner's list itself: the
// lists are never modified once made.
func (t *pathTable) wanted(p netip.Prefix) []netip.Addr {
	owners := t.owners[p]
	if len(owners) == 1 {
		hops, _ := t.contrib[owners[0]].get(p)
		return hops
	}
	var want []netip.Addr
	for _, o := range owners {
		hops, _ := t.contrib[o].get(p)
		want = append(want, hops...)
	}
	slices.SortFunc(want, netip.Addr.Compare)
	return slices.Compact(want)
}
