package netlab

import (
	"context"
	"net/netip"
	"os"
	"testing"
	"time"
)

// TestRouteWatch: in a namespace of its own (no lab, no lock), routes added,
// replaced by an ECMP route, moved to another metric and deleted with ip(8)
// are each seen by the watch, with the time the kernel's message arrived.
func TestRouteWatch(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipping: needs root (a network namespace)")
	}
	id, err := randomID()
	if err != nil {
		t.Fatal(err)
	}
	ns := "mccm-" + id + "-rw"
	if err := run("ip", "netns", "add", ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = run("ip", "netns", "del", ns) })
	// The lab's free block: gateways on a link, /32 routes via them.
	for _, args := range [][]string{
		{"link", "add", "d0", "type", "veth", "peer", "name", "d1"},
		{"addr", "add", "198.18.26.1/25", "dev", "d0"},
		{"link", "set", "d0", "up"},
		{"link", "set", "d1", "up"},
	} {
		if err := ipn(ns, args...); err != nil {
			t.Fatal(err)
		}
	}
	w, err := WatchRoutes(ns, netip.MustParsePrefix("198.18.26.128/25"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	p, other := netip.MustParsePrefix("198.18.26.200/32"), netip.MustParsePrefix("198.18.26.201/32")
	gw := addrs("198.18.26.2", "198.18.26.3")
	step := func(what string, want []netip.Addr, args ...string) {
		t.Helper()
		before := time.Now()
		if err := ipn(ns, args...); err != nil {
			t.Fatal(err)
		}
		after := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		at, err := w.Wait(ctx, p, want)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		// The message arrives after the change began, and at most a
		// moment after ip(8) returned.
		if at.Before(before) || at.After(after.Add(time.Second)) {
			t.Errorf("%s: seen at %s, the change ran from %s to %s", what, at.Format(time.StampMicro), before.Format(time.StampMicro), after.Format(time.StampMicro))
		}
		t.Logf("%s: seen %v after ip(8) began", what, at.Sub(before))
	}
	step("added", gw[:1], "route", "add", p.String(), "via", gw[0].String())
	step("replaced by ECMP", gw, "route", "replace", p.String(), "nexthop", "via", gw[0].String(), "nexthop", "via", gw[1].String())
	// A route of a higher metric is not the one in use.
	if err := ipn(ns, "route", "add", p.String(), "via", gw[1].String(), "metric", "100"); err != nil {
		t.Fatal(err)
	}
	step("the metric-0 route deleted: the metric-100 one is used", gw[1:], "route", "del", p.String(), "metric", "0")
	step("deleted", nil, "route", "del", p.String(), "metric", "100")
	// Outside the watched prefix, and another destination inside it.
	if err := ipn(ns, "route", "add", "198.18.26.64/32", "via", gw[0].String()); err != nil {
		t.Fatal(err)
	}
	if hops, ok := w.NextHops(netip.MustParsePrefix("198.18.26.64/32")); ok {
		t.Errorf("a route outside the watched prefix was taken: %v", hops)
	}
	// A route that goes, comes back and goes again within the quiet time:
	// settled at the last change.
	if err := ipn(ns, "route", "add", p.String(), "via", gw[0].String()); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Wait(context.Background(), p, gw[:1]); err != nil {
		t.Fatal(err)
	}
	settled := make(chan time.Time, 1)
	go func() {
		at, err := w.WaitSettled(context.Background(), p, nil, 300*time.Millisecond)
		if err != nil {
			t.Error(err)
		}
		settled <- at
	}()
	for _, args := range [][]string{
		{"route", "del", p.String()},
		{"route", "add", p.String(), "via", gw[1].String()},
		{"route", "del", p.String()},
	} {
		if err := ipn(ns, args...); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if at := <-settled; !at.Equal(w.ChangedAt(p)) || time.Since(at) < 300*time.Millisecond {
		t.Errorf("settled at %s, the last change was at %s", at.Format(time.StampMicro), w.ChangedAt(p).Format(time.StampMicro))
	}

	// Another destination: its own route; p's stays gone, seen when it went.
	gone, err := w.Wait(context.Background(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ipn(ns, "route", "add", other.String(), "via", gw[0].String()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := w.Wait(ctx, other, gw[:1]); err != nil {
		t.Error(err)
	}
	if again, err := w.Wait(ctx, p, nil); err != nil || !again.Equal(gone) {
		t.Errorf("%s after another destination changed: gone at %v, was %v (%v)", p, again, gone, err)
	}
	w.Close()
	w.Close() // safe twice
}
