package outofservice

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/metal-ccm/metal-ccm/pkg/annotation"
	"github.com/metal-ccm/metal-ccm/pkg/healthcheck"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestDecide(t *testing.T) {
	slow := Settings{Enabled: true}
	fast := Settings{Enabled: true, FastPath: true}
	for _, tc := range []struct {
		name string
		v    view
		s    Settings
		want step
		why  cause
	}{
		{name: "Ready, not marked", v: view{Ready: true}, s: slow, want: stepNone},
		{name: "NotReady", v: view{}, s: slow, want: stepAsk, why: causeNotReady},
		{name: "NotReady, off", v: view{}, s: Settings{}, want: stepNone},
		{name: "NotReady, someone else's taint", v: view{Tainted: true}, s: fast, want: stepNone},
		{name: "marked, Ready", v: view{Ready: true, Marked: true, Tainted: true}, s: slow, want: stepUntaint},
		{name: "marked, Ready, turned off since", v: view{Ready: true, Marked: true, Tainted: true}, s: Settings{}, want: stepUntaint},
		{name: "marked, NotReady", v: view{Marked: true, Tainted: true}, s: slow, want: stepKeep},
		{name: "fast path: Ready, check fails", v: view{Ready: true, Probe: healthcheck.Unhealthy}, s: fast, want: stepAsk, why: causeProbe},
		{name: "no fast path: Ready, check fails", v: view{Ready: true, Probe: healthcheck.Unhealthy}, s: slow, want: stepNone},
		{name: "fast path: Ready, check passes", v: view{Ready: true, Probe: healthcheck.Healthy}, s: fast, want: stepNone},
		{name: "fast path: Ready, not checked yet", v: view{Ready: true}, s: fast, want: stepNone},
		{name: "fast path: NotReady, check passes", v: view{Probe: healthcheck.Healthy}, s: fast, want: stepAsk, why: causeNotReady},
		{name: "fast path: marked, Ready, check fails", v: view{Ready: true, Marked: true, Tainted: true, Probe: healthcheck.Unhealthy}, s: fast, want: stepKeep},
		{name: "fast path: marked, Ready, not checked yet", v: view{Ready: true, Marked: true, Tainted: true}, s: fast, want: stepKeep},
		{name: "fast path: marked, Ready, check passes", v: view{Ready: true, Marked: true, Tainted: true, Probe: healthcheck.Healthy}, s: fast, want: stepUntaint},
		{name: "fast path: marked, NotReady, check passes", v: view{Marked: true, Tainted: true, Probe: healthcheck.Healthy}, s: fast, want: stepKeep},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := decide(tc.v, tc.s)
			if got != tc.want || why != tc.why {
				t.Errorf("decide(%+v) = %v, %q; want %v, %q", tc.v, got, why, tc.want, tc.why)
			}
		})
	}
}

// probes is a Prober whose states are set by the test.
type probes map[string]healthcheck.State

func (p probes) Update(context.Context, Settings, []*v1.Node) {}
func (p probes) State(name string) healthcheck.State          { return p[name] }
func (p probes) Stop()                                        {}

type world struct {
	ctrl   *Controller
	client *fake.Clientset
	now    time.Time
	events []string
}

func newWorld(t *testing.T, s Settings, n *v1.Node, probe healthcheck.State, answer func() (bool, error), pods []*v1.Pod) *world {
	t.Helper()
	w := &world{client: fake.NewClientset(), now: t0}
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := idx.Add(n); err != nil {
		t.Fatal(err)
	}
	if _, err := w.client.CoreV1().Nodes().Create(t.Context(), n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if _, err := w.client.CoreV1().Pods(p.Namespace).Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w.ctrl = &Controller{
		Nodes:    corelisters.NewNodeLister(idx),
		Client:   w.client,
		Off:      func(context.Context, *v1.Node) (bool, error) { return answer() },
		Settings: func() Settings { return s },
		Event: func(n *v1.Node, _, reason, format string, args ...any) {
			w.events = append(w.events, reason+": "+fmt.Sprintf(format, args...))
		},
		Probes: probes{n.Name: probe},
		now:    func() time.Time { return w.now },
	}
	return w
}

func node(ready, marked bool, taints ...v1.Taint) *v1.Node {
	status := v1.ConditionFalse
	if ready {
		status = v1.ConditionTrue
	}
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "x", Annotations: map[string]string{}},
		Spec:   v1.NodeSpec{Taints: taints},
		Status: v1.NodeStatus{Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: status}}}}
	if marked {
		n.Annotations[annotation.OutOfService] = t0.Format(time.RFC3339)
	}
	return n
}

func pod(name, nodeName string, terminating bool) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name)}, Spec: v1.PodSpec{NodeName: nodeName}}
	if terminating {
		p.DeletionTimestamp = &metav1.Time{Time: t0}
	}
	return p
}

func TestSync(t *testing.T) {
	slow := Settings{Enabled: true, ConfirmFor: 5 * time.Second, Source: "ipmi"}
	fast := slow
	fast.FastPath, fast.DeletePods = true, true
	// slowDelete: no fast path, but the leader force-deletes the pods.
	slowDelete := slow
	slowDelete.DeletePods = true
	// fastKeep: the fast path, the pods left to the garbage collector.
	fastKeep := fast
	fastKeep.DeletePods = false
	off := func() (bool, error) { return true, nil }
	on := func() (bool, error) { return false, nil }
	unknown := func() (bool, error) { return false, errors.New("i/o timeout") }
	operators := v1.Taint{Key: TaintKey, Value: "by-hand", Effect: v1.TaintEffectNoExecute}
	pods := []*v1.Pod{pod("gone", "x", true), pod("running", "x", false), pod("elsewhere", "y", true)}
	for _, tc := range []struct {
		name   string
		s      Settings
		node   *v1.Node
		probe  healthcheck.State
		answer func() (bool, error)
		// after is the time between the two rounds.
		after   time.Duration
		tainted bool     // the node has the taint after the rounds
		deleted []string // the pods gone after the rounds
		reason  string   // an Event's reason and a part of its message
	}{
		{name: "fast path: check fails, source Off for confirmFor: tainted", s: fast, node: node(true, false),
			probe: healthcheck.Unhealthy, answer: off, after: 5 * time.Second, tainted: true,
			reason: ReasonTainted + ": Power-state source ipmi has said the machine is off since 2026-01-02T03:04:05Z (confirmed for 5s) and the leader's check"},
		{name: "fast path: check fails, Off for less than confirmFor: not yet", s: fast, node: node(true, false),
			probe: healthcheck.Unhealthy, answer: off, after: 4 * time.Second},
		{name: "fast path: check fails, source On: never", s: fast, node: node(true, false),
			probe: healthcheck.Unhealthy, answer: on, after: time.Hour},
		{name: "fast path: check fails, source cannot answer: never", s: fast, node: node(true, false),
			probe: healthcheck.Unhealthy, answer: unknown, after: time.Hour},
		{name: "fast path: check passes, Ready, source Off: not asked", s: fast, node: node(true, false),
			probe: healthcheck.Healthy, answer: off, after: time.Hour},
		{name: "fast path: not checked yet, Ready, source Off: not asked", s: fast, node: node(true, false),
			probe: healthcheck.Unknown, answer: off, after: time.Hour},
		{name: "no fast path: check fails, Ready, source Off: not asked", s: slow, node: node(true, false),
			probe: healthcheck.Unhealthy, answer: off, after: time.Hour},
		{name: "no fast path: NotReady, source Off: tainted", s: slow, node: node(false, false),
			answer: off, after: 5 * time.Second, tainted: true, reason: ReasonTainted + ": " + "Power-state source ipmi"},
		{name: "fast path: tainted, still Ready, check fails, Off: Terminating pods force-deleted", s: fast, node: node(true, true, *taint),
			probe: healthcheck.Unhealthy, answer: off, tainted: true, deleted: []string{"gone"},
			reason: ReasonPodsDeleted + ": Power-state source ipmi says the machine is off and the node is tainted node.kubernetes.io/out-of-service: force-deleted its Terminating pods ns/gone"},
		{name: "fast path: tainted, NotReady, Off: Terminating pods force-deleted", s: fast, node: node(false, true, *taint),
			probe: healthcheck.Unhealthy, answer: off, tainted: true, deleted: []string{"gone"}, reason: ReasonPodsDeleted},
		{name: "fast path: tainted, source On again: no pod deleted", s: fast, node: node(false, true, *taint),
			probe: healthcheck.Unhealthy, answer: on, tainted: true},
		{name: "fast path: tainted, source cannot answer: no pod deleted", s: fast, node: node(false, true, *taint),
			probe: healthcheck.Unhealthy, answer: unknown, tainted: true},
		{name: "no fast path: tainted, Off: no pod deleted", s: slow, node: node(false, true, *taint),
			answer: off, tainted: true},
		{name: "no fast path, deletePods: tainted, NotReady, Off: Terminating pods force-deleted", s: slowDelete, node: node(false, true, *taint),
			answer: off, tainted: true, deleted: []string{"gone"}, reason: ReasonPodsDeleted},
		{name: "no fast path, deletePods: tainted, source cannot answer: no pod deleted", s: slowDelete, node: node(false, true, *taint),
			answer: unknown, tainted: true},
		{name: "no fast path, deletePods: an operator's taint, Off: no pod deleted", s: slowDelete, node: node(false, false, operators),
			answer: off, after: time.Hour, tainted: true},
		{name: "fast path, deletePods off: tainted, Off: no pod deleted", s: fastKeep, node: node(false, true, *taint),
			probe: healthcheck.Unhealthy, answer: off, tainted: true},
		{name: "fast path: tainted, Ready, not checked yet: stays", s: fast, node: node(true, true, *taint),
			probe: healthcheck.Unknown, answer: on, tainted: true},
		{name: "fast path: tainted, Ready, check passes: untainted", s: fast, node: node(true, true, *taint),
			probe: healthcheck.Healthy, answer: on, reason: ReasonUntainted},
		{name: "no fast path: tainted, Ready: untainted", s: slow, node: node(true, true, *taint),
			answer: on, reason: ReasonUntainted},
		{name: "fast path: an operator's taint, Ready, check passes: stays", s: fast, node: node(true, false, operators),
			probe: healthcheck.Healthy, answer: off, tainted: true},
		{name: "fast path: an operator's taint, check fails, Off: no pod deleted", s: fast, node: node(false, false, operators),
			probe: healthcheck.Unhealthy, answer: off, after: time.Hour, tainted: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, tc.s, tc.node, tc.probe, tc.answer, pods)
			w.ctrl.Sync(t.Context())
			w.now = w.now.Add(tc.after)
			w.ctrl.Sync(t.Context())

			n, err := w.client.CoreV1().Nodes().Get(t.Context(), "x", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := hasTaint(n); got != tc.tainted {
				t.Errorf("tainted: %t, want %t (taints %v)", got, tc.tainted, n.Spec.Taints)
			}
			if _, marked := n.Annotations[annotation.OutOfService]; marked && !tc.tainted {
				t.Errorf("still marked: %v", n.Annotations)
			}
			var gone []string
			for _, p := range pods {
				if _, err := w.client.CoreV1().Pods(p.Namespace).Get(t.Context(), p.Name, metav1.GetOptions{}); err != nil {
					gone = append(gone, p.Name)
				}
			}
			if !slices.Equal(gone, tc.deleted) {
				t.Errorf("pods deleted: %v, want %v", gone, tc.deleted)
			}
			if tc.reason == "" {
				if len(w.events) > 0 {
					t.Errorf("Events %q, want none", w.events)
				}
			} else if !slices.ContainsFunc(w.events, func(e string) bool { return strings.HasPrefix(e, tc.reason) }) {
				t.Errorf("Events %q, want one starting %q", w.events, tc.reason)
			}
		})
	}
}

// TestNodeChanged: a change of a node's Ready condition has the controller
// look at once; other changes (a heartbeat, a label) wait for the period.
func TestNodeChanged(t *testing.T) {
	labelled := node(true, false)
	labelled.Labels = map[string]string{"a": "b"}
	for _, tc := range []struct {
		name     string
		old, cur *v1.Node
		poked    bool
	}{
		{"Ready to NotReady", node(true, false), node(false, false), true},
		{"NotReady to Ready", node(false, true, *taint), node(true, true, *taint), true},
		{"still Ready, a label", node(true, false), labelled, false},
		{"still NotReady", node(false, false), node(false, false), false},
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
