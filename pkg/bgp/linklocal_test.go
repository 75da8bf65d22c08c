package bgp

import (
	"errors"
	"testing"
)

// TestFindRouterNone: the loopback has no router, and a missing interface
// is an error (the speaker then looks again; the lab tests find one).
func TestFindRouterNone(t *testing.T) {
	if _, err := findRouter("lo"); !errors.Is(err, ErrNoRouter) {
		t.Errorf("lo: %v, want ErrNoRouter", err)
	}
	if _, err := findRouter("no-such-link0"); err == nil || errors.Is(err, ErrNoRouter) {
		t.Errorf("missing interface: %v, want a lookup error", err)
	}
}

// TestRouterAdvert: the speaker's advertisement is a Router Advertisement
// (type 134, code 0) with a router lifetime of 0, so that no host takes the
// node for a default router, and nothing else a receiver would apply.
func TestRouterAdvert(t *testing.T) {
	ra := routerAdvert()
	if len(ra) != 16 || ra[0] != 134 {
		t.Fatalf("advertisement % x: want 16 bytes of type 134", ra)
	}
	for i, b := range ra[1:] {
		if b != 0 {
			t.Errorf("byte %d is %#x, want 0 (code, lifetime, timers, flags: none; the kernel sets the checksum)", i+1, b)
		}
	}
}
