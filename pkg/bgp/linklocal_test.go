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
