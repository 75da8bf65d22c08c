package announcer

import (
	"context"
	"net/netip"
	"testing"
)

func TestOnly(t *testing.T) {
	inPool := netip.MustParsePrefix("198.18.0.0/24")
	f := &fakeSpeaker{paths: map[netip.Prefix][]netip.Addr{}}
	b := Only(f, func(p netip.Prefix) bool { return inPool.Contains(p.Addr()) })
	hops := []netip.Addr{netip.MustParseAddr("198.18.1.1")}
	ctx := context.Background()
	kept, other := netip.MustParsePrefix("198.18.0.5/32"), netip.MustParsePrefix("198.18.9.5/32")
	for _, p := range []netip.Prefix{kept, other} {
		if err := b.SetPaths(ctx, p, hops); err != nil {
			t.Fatal(err)
		}
	}
	if got := f.get(kept.String()); got != "[198.18.1.1]" {
		t.Errorf("kept prefix: paths %s, want [198.18.1.1]", got)
	}
	if got := f.get(other.String()); got != "[]" {
		t.Errorf("other prefix: paths %s, want none", got)
	}
	// A prefix Only drops is withdrawn from the backend, not left as it was.
	f.paths[other] = hops
	if err := b.SetPaths(ctx, other, hops); err != nil {
		t.Fatal(err)
	}
	if got := f.get(other.String()); got != "[]" {
		t.Errorf("other prefix after a second call: paths %s, want none", got)
	}
}
