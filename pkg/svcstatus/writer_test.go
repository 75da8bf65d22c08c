package svcstatus

import (
	"context"
	"net/netip"
	"strconv"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/metal-ccm/metal-ccm/pkg/annotation"
)

// fakeSource serves its Services, each with the nodes in nodes.
type fakeSource struct {
	svcs  []*v1.Service
	nodes map[string][]string
}

func (f *fakeSource) Services() ([]*v1.Service, error) { return f.svcs, nil }
func (f *fakeSource) Changed() <-chan struct{}         { return nil }
func (f *fakeSource) State(svc *v1.Service) State {
	a := Announcement{Addr: v4, Protocol: BGP, Nodes: f.nodes[svc.Name], Peers: []string{"r"}, PeersUp: []string{"r"}}
	return State{Addresses: []netip.Addr{v4}, Announcements: []Announcement{a}, Known: true}
}

// fakePatcher applies the writes to the source's Services, as the API
// server and the informer would, and counts them.
type fakePatcher struct {
	src    *fakeSource
	writes map[string]int
	rv     int
}

func (p *fakePatcher) PatchStatus(_ context.Context, svc *v1.Service, conds []metav1.Condition, summary string) (*v1.Service, error) {
	p.writes[svc.Name]++
	p.rv++
	out := svc.DeepCopy()
	out.ResourceVersion = strconv.Itoa(p.rv)
	out.Status.Conditions = conds
	out.Annotations = map[string]string{annotation.Summary: summary}
	for i, s := range p.src.svcs {
		if s.Name == svc.Name {
			p.src.svcs[i] = out
		}
	}
	return out, nil
}

func TestWriterCoalesces(t *testing.T) {
	src := &fakeSource{nodes: map[string][]string{}}
	for _, n := range []string{"a", "b"} {
		src.svcs = append(src.svcs, &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: n, ResourceVersion: "1"}})
	}
	patch := &fakePatcher{src: src, writes: map[string]int{}, rv: 1}
	var events []string
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	w := NewWriter(src, patch, func() Limits { return Limits{MinInterval: 10 * time.Second, WritesPerSecond: 10} },
		Hooks{Event: func(svc *v1.Service, reason, msg string) { events = append(events, svc.Name+" "+reason+" "+msg) }}, clk)
	ctx := context.Background()

	// First round: both written, with an Event each.
	w.Round(ctx)
	if patch.writes["a"] != 1 || patch.writes["b"] != 1 || len(events) != 2 {
		t.Fatalf("first round: writes %v, events %q", patch.writes, events)
	}
	// Nothing changed: nothing written.
	w.Round(ctx)
	if w.Writes() != 2 {
		t.Fatalf("an unchanged round wrote: %v", patch.writes)
	}
	// Ten node changes within MinInterval: none written yet, the deadline
	// is set; then one write with the last state.
	for i := range 10 {
		src.nodes["a"] = append(src.nodes["a"], "n"+strconv.Itoa(i))
		clk.Step(500 * time.Millisecond)
		w.Round(ctx)
	}
	if patch.writes["a"] != 1 {
		t.Fatalf("written within MinInterval: %v", patch.writes)
	}
	if w.deadline.IsZero() {
		t.Fatal("no deadline for the held-off change")
	}
	clk.Step(5 * time.Second)
	w.Round(ctx)
	if patch.writes["a"] != 2 || patch.writes["b"] != 1 {
		t.Fatalf("after MinInterval: writes %v", patch.writes)
	}
	got := src.svcs[0].Annotations[annotation.Summary]
	if want := "198.18.100.1 BGP via 10 nodes (n0,n1,n2,n3,n4,+5) to 1/1 peers up (r)"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	if len(events) != 3 {
		t.Errorf("events %q, want 3", events)
	}
	// Another controller's condition is kept as it was, generation and all.
	other := metav1.Condition{Type: "example.com/Other", Status: metav1.ConditionTrue, Reason: "X", ObservedGeneration: 1}
	src.svcs[0] = src.svcs[0].DeepCopy()
	src.svcs[0].Generation = 2
	src.svcs[0].Status.Conditions = append(src.svcs[0].Status.Conditions, other)
	src.nodes["a"] = []string{"n0"}
	clk.Step(time.Minute)
	w.Round(ctx)
	for _, c := range src.svcs[0].Status.Conditions {
		switch {
		case c.Type == other.Type && c.ObservedGeneration != 1:
			t.Errorf("another controller's condition was changed: %+v", c)
		case c.Type != other.Type && c.ObservedGeneration != 2:
			t.Errorf("condition %s observed generation %d, want 2", c.Type, c.ObservedGeneration)
		}
	}
	// A Service the cache shows older than our write is not written.
	src.svcs[1] = src.svcs[1].DeepCopy()
	src.svcs[1].ResourceVersion = "1"
	src.nodes["b"] = []string{"x"}
	clk.Step(time.Minute)
	w.Round(ctx)
	if patch.writes["b"] != 1 {
		t.Errorf("a stale Service was written: %v", patch.writes)
	}
}
