package fencing

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/metal-ccm/metal-ccm/pkg/annotation"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestDecide(t *testing.T) {
	s := Settings{Enabled: true, After: time.Minute, MaxNodes: 1}
	notReady := func(name string, since time.Duration) NodeState {
		return NodeState{Name: name, NotReadySince: t0.Add(-since)}
	}
	ready := NodeState{Name: "ready", Ready: true}
	for _, tc := range []struct {
		name     string
		nodes    []NodeState
		maxNodes int
		maxShare int
		want     []string // due, in order
		room     int
	}{
		{name: "all Ready", nodes: []NodeState{ready}, room: 1},
		{name: "NotReady for less than after", nodes: []NodeState{ready, notReady("a", 59*time.Second)}, room: 1},
		{name: "NotReady for after", nodes: []NodeState{ready, notReady("a", time.Minute)}, want: []string{"a"}, room: 1},
		{name: "no Ready condition", nodes: []NodeState{{Name: "a"}}, room: 1},
		{name: "already fenced: counted", nodes: []NodeState{{Name: "a", NotReadySince: t0.Add(-time.Hour), Fenced: true}}},
		{name: "two NotReady, limit 1: the longest NotReady first", nodes: []NodeState{notReady("b", time.Minute), notReady("a", time.Hour)}, want: []string{"a", "b"}, room: 1},
		{name: "as long NotReady: by name", nodes: []NodeState{notReady("b", time.Hour), notReady("a", time.Hour)}, want: []string{"a", "b"}, room: 1},
		{name: "two NotReady, limit 2", nodes: []NodeState{notReady("a", time.Hour), notReady("b", 2*time.Minute)}, maxNodes: 2, want: []string{"a", "b"}, room: 2},
		{name: "a fenced node not Ready again takes the place", nodes: []NodeState{{Name: "f", NotReadySince: t0.Add(-time.Hour), Fenced: true}, notReady("a", time.Hour)}, want: []string{"a"}},
		{name: "a fenced node Ready again does not", nodes: []NodeState{{Name: "f", Ready: true, Fenced: true}, notReady("a", time.Hour)}, want: []string{"a"}, room: 1},
		{name: "limit 2, share 50% of 2 nodes: 1", nodes: []NodeState{notReady("a", time.Hour), notReady("b", time.Hour)}, maxNodes: 2, maxShare: 50, want: []string{"a", "b"}, room: 1},
		{name: "limit 2, share 50% of 4 nodes: 2", nodes: []NodeState{notReady("a", time.Hour), notReady("b", time.Hour), ready, ready}, maxNodes: 2, maxShare: 50, want: []string{"a", "b"}, room: 2},
		{name: "share 40% of 2 nodes rounds to 0", nodes: []NodeState{notReady("a", time.Hour), ready}, maxShare: 40, want: []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := s
			if tc.maxNodes > 0 {
				s.MaxNodes = tc.maxNodes
			}
			s.MaxShare = tc.maxShare
			d := Decide(tc.nodes, t0, s)
			var got []string
			for _, n := range d.Due {
				got = append(got, n.Name)
			}
			if !slices.Equal(got, tc.want) || d.Room() != tc.room {
				t.Errorf("Decide = due %v room %d; want due %v room %d", got, d.Room(), tc.want, tc.room)
			}
		})
	}
}

func node(name string, ready bool, since time.Time, ann map[string]string) *v1.Node {
	status := v1.ConditionFalse
	if ready {
		status = v1.ConditionTrue
	}
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: ann},
		Status: v1.NodeStatus{Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: status, LastTransitionTime: metav1.NewTime(since)}}}}
}

type world struct {
	ctrl     *Controller
	client   *fake.Clientset
	events   []string
	poweredO []string
}

// newWorld is a controller over nodes (in its cache and the API server),
// whose source says off for the names in off and errs for those in errs,
// and whose PowerOff fails with powerErr.
func newWorld(t *testing.T, s Settings, nodes []*v1.Node, off, errs map[string]bool, powerErr error) *world {
	t.Helper()
	w := &world{client: fake.NewClientset()}
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, n := range nodes {
		if err := idx.Add(n); err != nil {
			t.Fatal(err)
		}
		if _, err := w.client.CoreV1().Nodes().Create(t.Context(), n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w.ctrl = &Controller{
		Nodes:  corelisters.NewNodeLister(idx),
		Client: w.client,
		Off: func(_ context.Context, n *v1.Node) (bool, error) {
			if errs[n.Name] {
				return false, errors.New("no answer")
			}
			return off[n.Name], nil
		},
		PowerOff: func(_ context.Context, n *v1.Node) error {
			w.poweredO = append(w.poweredO, n.Name)
			return powerErr
		},
		Settings: func() Settings { return s },
		Event: func(n *v1.Node, eventType, reason, format string, args ...any) {
			w.events = append(w.events, fmt.Sprintf("%s %s %s", n.Name, eventType, reason))
		},
		now: func() time.Time { return t0 },
	}
	return w
}

func (w *world) marked(t *testing.T, name string) bool {
	t.Helper()
	n, err := w.client.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, ok := n.Annotations[annotation.Fenced]
	return ok
}

func TestSync(t *testing.T) {
	on := Settings{Enabled: true, After: time.Minute, MaxNodes: 1, Source: "ipmi"}
	long := t0.Add(-time.Hour)
	for _, tc := range []struct {
		name     string
		settings Settings
		nodes    []*v1.Node
		off      map[string]bool
		errs     map[string]bool
		powerErr error
		lease    *time.Time      // the Lease of node a renewed then
		apiNode  *v1.Node        // the API server's node a, when it differs from the cache
		cancel   bool            // the leader's context ended
		fenced   []string        // powered off
		events   []string        // after two rounds
		marked   map[string]bool // fencing mark after
	}{
		{name: "due and On: fenced", settings: on, nodes: []*v1.Node{node("a", false, long, nil), node("b", true, long, nil)},
			fenced: []string{"a"}, events: []string{"a Warning Fenced"}, marked: map[string]bool{"a": true, "b": false}},
		{name: "disabled", settings: Settings{After: time.Minute, MaxNodes: 1}, nodes: []*v1.Node{node("a", false, long, nil)}, marked: map[string]bool{"a": false}},
		{name: "not NotReady for long enough", settings: on, nodes: []*v1.Node{node("a", false, t0.Add(-59*time.Second), nil)}},
		{name: "source says Off: the out-of-service rule's", settings: on, nodes: []*v1.Node{node("a", false, long, nil)}, off: map[string]bool{"a": true}},
		{name: "source cannot tell: never fenced", settings: on, nodes: []*v1.Node{node("a", false, long, nil)}, errs: map[string]bool{"a": true}},
		{name: "dry run: WouldFence once, nothing powered off", settings: Settings{Enabled: true, After: time.Minute, MaxNodes: 1, DryRun: true},
			nodes: []*v1.Node{node("a", false, long, nil)}, events: []string{"a Normal WouldFence"}, marked: map[string]bool{"a": false}},
		{name: "two NotReady, limit 1: one fenced, the other held, told once", settings: on, nodes: []*v1.Node{node("b", false, long, nil), node("a", false, long.Add(-time.Second), nil)},
			fenced: []string{"a"}, events: []string{"a Warning Fenced", "b Warning FencingHeld"}, marked: map[string]bool{"a": true, "b": false}},
		{name: "the longest NotReady is off already: the next fenced", settings: on, nodes: []*v1.Node{node("a", false, long, nil), node("b", false, long, nil)},
			off: map[string]bool{"a": true}, fenced: []string{"b"}, events: []string{"b Warning Fenced"}},
		{name: "the longest NotReady cannot be asked: the next fenced", settings: on, nodes: []*v1.Node{node("a", false, long, nil), node("b", false, long, nil)},
			errs: map[string]bool{"a": true}, fenced: []string{"b"}, events: []string{"b Warning Fenced"}},
		{name: "a fenced node not Ready again: the next held", settings: on, nodes: []*v1.Node{node("a", false, long, map[string]string{annotation.Fenced: "x"}), node("b", false, long, nil)},
			events: []string{"b Warning FencingHeld"}},
		{name: "dry run, two NotReady, limit 1: one WouldFence, the other held", settings: Settings{Enabled: true, After: time.Minute, MaxNodes: 1, DryRun: true},
			nodes: []*v1.Node{node("a", false, long, nil), node("b", false, long, nil)}, events: []string{"a Normal WouldFence", "b Warning FencingHeld"}},
		{name: "two NotReady, limit 2: both", settings: Settings{Enabled: true, After: time.Minute, MaxNodes: 2}, nodes: []*v1.Node{node("a", false, long, nil), node("b", false, long, nil)},
			fenced: []string{"a", "b"}, events: []string{"a Warning Fenced", "b Warning Fenced"}},
		{name: "Ready at the API server, not yet in the cache", settings: on, nodes: []*v1.Node{node("a", false, long, nil)}, apiNode: node("a", true, t0, nil)},
		{name: "Lease renewed since NotReady", settings: on, nodes: []*v1.Node{node("a", false, long, nil)}, lease: ptrTime(long.Add(time.Second))},
		{name: "Lease renewed before NotReady", settings: on, nodes: []*v1.Node{node("a", false, long, nil)}, lease: ptrTime(long.Add(-time.Second)),
			fenced: []string{"a"}, events: []string{"a Warning Fenced"}},
		{name: "leader's context ended", settings: on, nodes: []*v1.Node{node("a", false, long, nil)}, cancel: true},
		{name: "the BMC refuses: FencingFailed, not marked, not tried again at once", settings: on, nodes: []*v1.Node{node("a", false, long, nil)}, powerErr: errors.New("refused"),
			fenced: []string{"a"}, events: []string{"a Warning FencingFailed"}, marked: map[string]bool{"a": false}},
		{name: "fenced and Ready again: unmarked", settings: on, nodes: []*v1.Node{node("a", true, t0, map[string]string{annotation.Fenced: "x"})}, marked: map[string]bool{"a": false}},
		{name: "fenced, still NotReady: not again", settings: on, nodes: []*v1.Node{node("a", false, long, map[string]string{annotation.Fenced: "x"})}, marked: map[string]bool{"a": true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, tc.settings, tc.nodes, tc.off, tc.errs, tc.powerErr)
			if tc.apiNode != nil {
				if _, err := w.client.CoreV1().Nodes().Update(t.Context(), tc.apiNode, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if tc.lease != nil {
				l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: LeaseNamespace, Name: "a"},
					Spec: coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: *tc.lease}}}
				if _, err := w.client.CoordinationV1().Leases(LeaseNamespace).Create(t.Context(), l, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if tc.cancel {
				cancel()
			}
			w.ctrl.Sync(ctx)
			w.ctrl.Sync(ctx) // a second round changes nothing: no second fence, no second Event
			if !slices.Equal(w.poweredO, tc.fenced) {
				t.Errorf("powered off %v; want %v", w.poweredO, tc.fenced)
			}
			if !slices.Equal(w.events, tc.events) {
				t.Errorf("Events %v; want %v", w.events, tc.events)
			}
			for name, want := range tc.marked {
				if got := w.marked(t, name); got != want {
					t.Errorf("node %s marked %v; want %v", name, got, want)
				}
			}
		})
	}
}

func ptrTime(t time.Time) *time.Time { return &t }

// TestNodeChanged: a change of a node's Ready condition has the controller
// look at once (a fenced node back is unmarked without waiting for the
// period); other changes wait for the period.
func TestNodeChanged(t *testing.T) {
	at := time.Unix(1000, 0)
	labelled := node("a", true, at, nil)
	labelled.Labels = map[string]string{"a": "b"}
	for _, tc := range []struct {
		name     string
		old, cur *v1.Node
		poked    bool
	}{
		{"Ready to NotReady", node("a", true, at, nil), node("a", false, at, nil), true},
		{"NotReady to Ready", node("a", false, at, nil), node("a", true, at, nil), true},
		{"still Ready, a label", node("a", true, at, nil), labelled, false},
		{"still NotReady", node("a", false, at, nil), node("a", false, at.Add(time.Second), nil), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Controller{}
			c.NodeChanged(tc.old, tc.cur)
			if got := len(c.wakeCh()) == 1; got != tc.poked {
				t.Errorf("poked: %t, want %t", got, tc.poked)
			}
		})
	}
}
