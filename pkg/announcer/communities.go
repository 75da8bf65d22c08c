package announcer

import (
	"context"
	"net/netip"

	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/community"
)

// CommunityBackend is a Backend whose paths also carry the communities the
// Services of a prefix add to it (BGP). The announcer sends a prefix's
// communities before its next hops, so that new paths go out with them.
type CommunityBackend interface {
	Backend
	SetCommunities(ctx context.Context, prefix netip.Prefix, c community.Set) error
}

// communityTable merges the communities each Service adds to its prefixes
// (two Services may share an address) and keeps the backend equal to it.
// It is owned by the run loop.
type communityTable struct {
	contrib map[string]map[netip.Prefix]community.Set // Service key -> its prefixes' communities
	owners  map[netip.Prefix]map[string]bool          // prefix -> the Services adding some
	applied map[netip.Prefix]community.Set            // what the backend has
	retry   map[netip.Prefix]bool
}

func newCommunityTable() *communityTable {
	return &communityTable{
		contrib: map[string]map[netip.Prefix]community.Set{},
		owners:  map[netip.Prefix]map[string]bool{},
		applied: map[netip.Prefix]community.Set{},
		retry:   map[netip.Prefix]bool{},
	}
}

// set makes next the communities Service key adds, and marks the prefixes
// whose communities may have changed in touched.
func (t *communityTable) set(key string, next map[netip.Prefix]community.Set, touched map[netip.Prefix]bool) {
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

// apply sends the backend the communities of the touched prefixes (and of
// those whose last change failed) that changed, and reports whether some
// failed again.
func (t *communityTable) apply(ctx context.Context, backend CommunityBackend, touched map[netip.Prefix]bool) bool {
	for p := range t.retry {
		touched[p] = true
	}
	t.retry = map[netip.Prefix]bool{}
	for p := range touched {
		var want community.Set
		for key := range t.owners[p] {
			want = want.Union(t.contrib[key][p])
		}
		if want.Equal(t.applied[p]) {
			continue
		}
		if err := backend.SetCommunities(ctx, p, want); err != nil {
			klog.FromContext(ctx).Error(err, "Cannot set the communities; retrying", "prefix", p)
			t.retry[p] = true
			continue
		}
		if want.Empty() {
			delete(t.applied, p)
		} else {
			t.applied[p] = want
		}
	}
	return len(t.retry) > 0
}
