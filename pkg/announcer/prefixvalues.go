package announcer

import (
	"context"
	"net/netip"

	"k8s.io/klog/v2"
)

// prefixValues merges a value per prefix that each Service contributes (two
// Services may share an address: their values are merged) and keeps the
// backend equal to it, sending only what changed: the communities a
// Service adds to its paths, the endpoints behind each next hop. It is
// owned by the run loop.
type prefixValues[V any] struct {
	contrib map[string]map[netip.Prefix]V // Service key -> its prefixes' values
	owners  map[netip.Prefix]map[string]bool
	applied map[netip.Prefix]V // what the backend has
	retry   map[netip.Prefix]bool

	merge func(a, b V) V // a new value, neither a nor b modified
	equal func(a, b V) bool
	empty func(V) bool
	send  func(ctx context.Context, prefix netip.Prefix, v V) error
	what  string // what the values are, for the log
}

func newPrefixValues[V any](what string, merge func(a, b V) V, equal func(a, b V) bool, empty func(V) bool,
	send func(context.Context, netip.Prefix, V) error) *prefixValues[V] {
	return &prefixValues[V]{
		contrib: map[string]map[netip.Prefix]V{},
		owners:  map[netip.Prefix]map[string]bool{},
		applied: map[netip.Prefix]V{},
		retry:   map[netip.Prefix]bool{},
		merge:   merge, equal: equal, empty: empty, send: send, what: what,
	}
}

// set makes next the values Service key contributes, and marks the prefixes
// whose values may have changed in touched.
func (t *prefixValues[V]) set(key string, next map[netip.Prefix]V, touched map[netip.Prefix]bool) {
	for p := range t.contrib[key] {
		touched[p] = true
		delete(t.owners[p], key)
		if len(t.owners[p]) == 0 {
			delete(t.owners, p)
		}
	}
	if len(next) == 0 {
		delete(t.contrib, key)
		return
	}
	t.contrib[key] = next
	for p := range next {
		touched[p] = true
		if t.owners[p] == nil {
			t.owners[p] = map[string]bool{}
		}
		t.owners[p][key] = true
	}
}

// wanted is the merge of what the owners of p contribute.
func (t *prefixValues[V]) wanted(p netip.Prefix) V {
	var want V
	first := true
	for key := range t.owners[p] {
		if first {
			want, first = t.contrib[key][p], false
			continue
		}
		want = t.merge(want, t.contrib[key][p])
	}
	return want
}

// apply sends the backend the values of the touched prefixes (and of those
// whose last change failed) that changed, and reports whether some failed
// again.
func (t *prefixValues[V]) apply(ctx context.Context, touched map[netip.Prefix]bool) bool {
	for p := range t.retry {
		touched[p] = true
	}
	t.retry = map[netip.Prefix]bool{}
	for p := range touched {
		want := t.wanted(p)
		if t.equal(want, t.applied[p]) {
			continue
		}
		if err := t.send(ctx, p, want); err != nil {
			klog.FromContext(ctx).Error(err, "Cannot set the "+t.what+"; retrying", "prefix", p)
			t.retry[p] = true
			continue
		}
		if t.empty(want) {
			delete(t.applied, p)
		} else {
			t.applied[p] = want
		}
	}
	return len(t.retry) > 0
}
