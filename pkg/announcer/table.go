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

// pathTable merges what every owner contributes into one set of next hops
// per prefix (two Services may share an address) and keeps the backend equal
// to it, sending only what changed. It is owned by the run loop.
type pathTable struct {
	contrib map[owner]map[netip.Prefix][]netip.Addr // owner -> its prefixes and next hops
	owners  map[netip.Prefix]map[owner]bool         // prefix -> its owners
	applied map[netip.Prefix][]netip.Addr           // what the backend has
	retry   map[netip.Prefix]bool                   // prefixes whose last change failed
}

func newPathTable() *pathTable {
	return &pathTable{
		contrib: map[owner]map[netip.Prefix][]netip.Addr{},
		owners:  map[netip.Prefix]map[owner]bool{},
		applied: map[netip.Prefix][]netip.Addr{},
		retry:   map[netip.Prefix]bool{},
	}
}

// set makes next the contribution of o (none: o contributes nothing) and
// marks every prefix it had or has in touched.
func (t *pathTable) set(o owner, next map[netip.Prefix][]netip.Addr, touched map[netip.Prefix]bool) {
	for p := range t.contrib[o] {
		touched[p] = true
		if _, still := next[p]; !still {
			delete(t.owners[p], o)
		}
	}
	if len(next) == 0 {
		delete(t.contrib, o)
	} else {
		t.contrib[o] = next
	}
	for p := range next {
		touched[p] = true
		if t.owners[p] == nil {
			t.owners[p] = map[owner]bool{}
		}
		t.owners[p][o] = true
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
		for o := range owners {
			return t.contrib[o][p]
		}
	}
	var want []netip.Addr
	for o := range owners {
		want = append(want, t.contrib[o][p]...)
	}
	slices.SortFunc(want, netip.Addr.Compare)
	return slices.Compact(want)
}
