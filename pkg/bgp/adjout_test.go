package bgp

import (
	"net/netip"
	"slices"
	"testing"
)

// TestDiff: what a peer's router is sent for a prefix, from what it has
// and what it is to have.
func TestDiff(t *testing.T) {
	prefix := netip.MustParsePrefix("198.18.30.1/32")
	a, b, c := netip.MustParseAddr("198.18.10.11"), netip.MustParseAddr("198.18.10.12"), netip.MustParseAddr("198.18.10.13")
	sentAB := sentPaths{hops: []netip.Addr{a, b}, ids: []uint32{1, 2}, gen: 3}
	want := func(gen uint32, hops []netip.Addr, ids []uint32) wanted {
		return wanted{hops: hops, ids: ids, gen: gen}
	}
	for _, tc := range []struct {
		name      string
		sent      sentPaths
		had       bool
		want      wanted
		ok        bool
		addPath   bool
		announced []uint32 // path identifiers announced
		withdrawn []uint32
		keep      bool
	}{
		{"new prefix: every path", sentPaths{}, false, want(3, []netip.Addr{a, b}, []uint32{1, 2}), true, true, []uint32{1, 2}, nil, true},
		{"unchanged: nothing", sentAB, true, want(3, []netip.Addr{a, b}, []uint32{1, 2}), true, true, nil, nil, true},
		{"a hop added: its path", sentAB, true, want(3, []netip.Addr{a, b, c}, []uint32{1, 2, 5}), true, true, []uint32{5}, nil, true},
		{"a hop gone: its withdrawal", sentAB, true, want(3, []netip.Addr{b}, []uint32{2}), true, true, nil, []uint32{1}, true},
		{"attributes changed: every path again", sentAB, true, want(4, []netip.Addr{a, b}, []uint32{1, 2}), true, true, []uint32{1, 2}, nil, true},
		{"not wanted: every path withdrawn", sentAB, true, wanted{}, false, true, nil, []uint32{1, 2}, false},
		{"never sent, not wanted: nothing", sentPaths{}, false, wanted{}, false, true, nil, nil, false},
		{"without ADD-PATH: the first path", sentPaths{}, false, want(3, []netip.Addr{a, b}, []uint32{1, 2}), true, false, []uint32{0}, nil, true},
		{"without ADD-PATH, the first hop gone: replaced", sentPaths{hops: []netip.Addr{a}, ids: []uint32{0}, gen: 3}, true, want(3, []netip.Addr{b, c}, []uint32{2, 5}), true, false, []uint32{0}, nil, true},
		{"without ADD-PATH, another hop gone: nothing", sentPaths{hops: []netip.Addr{a}, ids: []uint32{0}, gen: 3}, true, want(3, []netip.Addr{a, c}, []uint32{1, 5}), true, false, nil, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ann, wd, next, keep := diff(prefix, tc.sent, tc.had, tc.want, tc.ok, tc.addPath, nil, nil)
			var gotAnn, gotWd []uint32
			for _, x := range ann {
				gotAnn = append(gotAnn, x.nlri.ID)
			}
			for _, x := range wd {
				gotWd = append(gotWd, x.ID)
			}
			if !slices.Equal(gotAnn, tc.announced) || !slices.Equal(gotWd, tc.withdrawn) || keep != tc.keep {
				t.Errorf("announced %v, withdrawn %v, kept %v; want %v, %v, %v", gotAnn, gotWd, keep, tc.announced, tc.withdrawn, tc.keep)
			}
			if keep && tc.addPath && !slices.Equal(next.ids, tc.want.ids) {
				t.Errorf("sent ids after %v, want %v", next.ids, tc.want.ids)
			}
		})
	}
}
