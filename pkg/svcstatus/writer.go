package svcstatus

import (
	"context"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/metal-ccm/metal-ccm/pkg/annotation"
)

// Source is what the writer shows: the Services, and what is known of
// each.
type Source interface {
	// Services are the Services to keep current (the informer's objects:
	// not to be modified).
	Services() ([]*v1.Service, error)
	// State is what is known of svc now.
	State(svc *v1.Service) State
	// Changed receives a value when some State may have changed.
	Changed() <-chan struct{}
}

// Patcher writes a Service's conditions and summary annotation in one
// request, if the Service is still at svc's resourceVersion, and returns
// the Service it wrote.
type Patcher interface {
	PatchStatus(ctx context.Context, svc *v1.Service, conds []metav1.Condition, summary string) (*v1.Service, error)
}

// Limits bound the writes.
type Limits struct {
	// MinInterval is the least time between two writes to one Service:
	// the changes in between are written together, once it has passed.
	MinInterval time.Duration
	// WritesPerSecond bounds the writes to all Services together (a token
	// bucket of as many writes).
	WritesPerSecond int
}

// resync bounds how long a change the source did not signal (or a failed
// write) waits.
const resync = 30 * time.Second

// Writer keeps the conditions and the summary of every Service the source
// gives equal to its State, at most one write per Service per MinInterval
// and WritesPerSecond writes in all. Only the leader runs it.
type Writer struct {
	src    Source
	patch  Patcher
	limits func() Limits
	hooks  Hooks
	clock  clock.Clock

	limiter  flowcontrol.RateLimiter
	rate     int
	last     map[string]time.Time // Service key -> time of our last write
	written  map[string]string    // Service key -> resourceVersion our last write returned
	writes   int                  // successful writes, for tests
	deadline time.Time            // the earliest time a held-off change is due
}

// Hooks are what the writer tells its user.
type Hooks struct {
	// Event records an Event on a Service.
	Event func(svc *v1.Service, reason, message string)
	// Wrote is called after each write (err: it failed).
	Wrote func(err error)
	// Busy, when it reports true, holds the writes back (checked every
	// busyWait): other writes come first (the service controller's).
	Busy func() bool
	// Counted is called after each full round with the number of Services
	// by the reason of their Announced condition ("" while unknown).
	Counted func(byReason map[string]int)
}

// NewWriter builds a writer; limits is read before every round (a config
// reload applies).
func NewWriter(src Source, patch Patcher, limits func() Limits, hooks Hooks, clk clock.Clock) *Writer {
	return &Writer{src: src, patch: patch, limits: limits, hooks: hooks, clock: clk, last: map[string]time.Time{}, written: map[string]string{}}
}

// roundGap is the least time between two rounds: changes in between are
// seen together (a round reads every Service).
const roundGap = time.Second

// Run writes what changed until ctx ends.
func (w *Writer) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName("service-status")
	ctx = klog.NewContext(ctx, logger)
	for {
		w.Round(ctx)
		select {
		case <-ctx.Done():
			return
		case <-w.clock.After(roundGap):
		}
		wait := resync
		if !w.deadline.IsZero() {
			wait = min(wait, max(w.deadline.Sub(w.clock.Now()), 0))
		}
		select {
		case <-ctx.Done():
			return
		case <-w.src.Changed():
		case <-w.clock.After(wait):
		}
	}
}

// Round writes every Service whose conditions or summary differ from its
// State and that was not written within MinInterval; it notes when the
// next held-off one is due.
func (w *Writer) Round(ctx context.Context) {
	logger := klog.FromContext(ctx)
	lim := w.limits()
	if w.limiter == nil || w.rate != lim.WritesPerSecond {
		w.limiter = flowcontrol.NewTokenBucketRateLimiterWithClock(float32(lim.WritesPerSecond), lim.WritesPerSecond, w.clock)
		w.rate = lim.WritesPerSecond
	}
	list, err := w.src.Services()
	if err != nil {
		return
	}
	w.deadline = time.Time{}
	seen := make(map[string]bool, len(list))
	byReason := map[string]int{}
	for _, svc := range list {
		if ctx.Err() != nil {
			return
		}
		key := cache.MetaObjectToName(svc).String()
		seen[key] = true
		if w.stale(key, svc) {
			byReason[""]++
			continue // the cache has not seen our last write yet
		}
		st := w.src.State(svc)
		now := w.clock.Now()
		want := st.Conditions()
		if len(want) > 1 {
			byReason[want[1].Reason]++
		} else {
			byReason[""]++
		}
		conds, changed := Merge(svc.Status.Conditions, want, metav1.NewTime(now))
		noNode := ""
		if st.NoNodeWhy != "" { // an Event only with the why
			noNode = newNoEligibleNode(svc.Status.Conditions, conds)
		}
		summary := svc.Annotations[annotation.Summary]
		newSummary := summary
		if st.Known {
			newSummary = st.Summary()
		}
		if !changed && newSummary == summary {
			continue
		}
		if due := w.last[key].Add(lim.MinInterval); now.Before(due) {
			if w.deadline.IsZero() || due.Before(w.deadline) {
				w.deadline = due
			}
			continue
		}
		if !w.waitIdle(ctx) {
			return
		}
		if err := w.limiter.Wait(ctx); err != nil {
			return
		}
		for i := range conds {
			if conds[i].Type == TypeAllocated || conds[i].Type == TypeAnnounced {
				conds[i].ObservedGeneration = svc.Generation // others' conditions stay theirs
			}
		}
		got, err := w.patch.PatchStatus(ctx, svc, conds, newSummary)
		w.last[key] = w.clock.Now()
		if w.hooks.Wrote != nil {
			w.hooks.Wrote(err)
		}
		if err != nil {
			// A conflict is a Service changed since it was read (the next
			// round reads it again); not found, one deleted since.
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				logger.V(2).Info("Service changed while its status was written; retrying", "service", klog.KObj(svc))
			} else {
				logger.Error(err, "Cannot write the Service's conditions and announcement summary; retrying", "service", klog.KObj(svc))
			}
			w.deadline = w.clock.Now()
			continue
		}
		w.writes++
		w.written[key] = got.ResourceVersion
		if noNode != "" && w.hooks.Event != nil {
			w.hooks.Event(svc, ReasonNoEligibleNode, noNode)
		}
		if newSummary != summary {
			if w.hooks.Event != nil {
				w.hooks.Event(svc, ReasonAnnouncementChanged, orNone(newSummary)+" (was: "+orNone(summary)+")")
			}
		}
	}
	if w.hooks.Counted != nil {
		w.hooks.Counted(byReason)
	}
	for key := range w.last {
		if !seen[key] {
			delete(w.last, key)
			delete(w.written, key)
		}
	}
}

// newNoEligibleNode is the message of want's (merged) Announced condition when its
// reason is ReasonNoEligibleNode and it is new (another reason or message
// before), so that an Event says why once, not on every write.
func newNoEligibleNode(old, want []metav1.Condition) string {
	i := slices.IndexFunc(want, func(c metav1.Condition) bool { return c.Type == TypeAnnounced })
	if i < 0 || want[i].Reason != ReasonNoEligibleNode {
		return ""
	}
	j := slices.IndexFunc(old, func(c metav1.Condition) bool { return c.Type == TypeAnnounced })
	if j >= 0 && old[j].Reason == want[i].Reason && old[j].Message == want[i].Message {
		return ""
	}
	return want[i].Message
}

// busyWait is how often a writer held back by Busy looks again.
const busyWait = time.Second

// waitIdle waits while Busy reports true; false when ctx ended.
func (w *Writer) waitIdle(ctx context.Context) bool {
	for w.hooks.Busy != nil && w.hooks.Busy() {
		select {
		case <-ctx.Done():
			return false
		case <-w.clock.After(busyWait):
		}
	}
	return true
}

// Writes is the number of successful writes so far.
func (w *Writer) Writes() int { return w.writes }

// stale reports whether svc is older than our last write to it.
func (w *Writer) stale(key string, svc *v1.Service) bool {
	rv, ok := w.written[key]
	if !ok {
		return false
	}
	cmp, err := resourceversion.CompareResourceVersion(svc.ResourceVersion, rv)
	return err == nil && cmp < 0
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
