// Package witness makes the API server the third vote of a two-node L2
// cluster. Two agents that lose each other cannot tell a dead peer from a
// cut link, so neither has a majority of two, and the addresses fall silent
// until the node controller marks the lost node not Ready (40 s by
// default). With a witness, one Lease that one agent holds at a time, the
// holder has two votes of three: a holder that loses its peer keeps
// answering, and a survivor that was not the holder takes the Lease once
// the holder has stopped renewing it, then answers. Only the side that
// holds the Lease has a majority, so two nodes never both answer.
package witness

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// Leases reads and writes the one Lease of the witness. The agents may get
// and update that Lease only (it is created by whoever installs them), so
// the witness never creates one.
type Leases interface {
	Get(ctx context.Context, name string) (*coordinationv1.Lease, error)
	Update(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error)
}

// Timing of the witness. A holder counts its vote only while its last
// renewal began less than RenewDeadline ago, on its own clock; another
// agent takes the Lease only once the Lease has not changed for Duration
// since it first saw it so, on its clock. RenewDeadline < Duration keeps
// the two apart by the difference (1 s by default), whatever the clocks
// say, as long as they run at about the same rate.
type Timing struct {
	Duration       time.Duration // the Lease's duration: how long an unchanged Lease is left alone
	RenewDeadline  time.Duration // how long a holder counts its vote after a renewal began
	RenewEvery     time.Duration // how often a holder renews
	RetryEvery     time.Duration // how often an agent that does not hold it looks at the Lease
	RequestTimeout time.Duration
}

// DefaultTiming: the survivor of a dead holder answers within Duration
// plus RetryEvery of the holder's last renewal (about 3.5 s), the holder
// renews once a second.
func DefaultTiming() Timing {
	return Timing{Duration: 3 * time.Second, RenewDeadline: 2 * time.Second, RenewEvery: time.Second,
		RetryEvery: 500 * time.Millisecond, RequestTimeout: time.Second}
}

// Witness takes and keeps the Lease for its identity while it is wanted.
type Witness struct {
	leases   Leases
	name     string
	identity string
	timing   Timing
	changed  chan struct{} // to the readers of Held
	wake     chan struct{} // to Run, when Want changes

	mu      sync.Mutex
	wanted  bool
	renewed time.Time // when the last successful write of ours began; zero: not holding
	// The Lease as last seen, and when it was first seen so (our clock).
	seen    string // resourceVersion
	seenAt  time.Time
	lastErr string
}

// New builds a witness that holds the Lease name for identity (the node's
// name).
func New(leases Leases, name, identity string, t Timing) *Witness {
	return &Witness{leases: leases, name: name, identity: identity, timing: t, changed: make(chan struct{}, 1), wake: make(chan struct{}, 1)}
}

// Want says whether the witness is needed now (exactly two agents are
// expected): only then does it look at the Lease and take it.
func (w *Witness) Want(on bool) {
	w.mu.Lock()
	prev := w.wanted
	w.wanted = on
	w.mu.Unlock()
	if prev != on {
		signal(w.wake)
		signal(w.changed)
	}
}

// Held reports whether this agent holds the witness's vote now: it is
// wanted, and its last renewal began less than RenewDeadline ago.
func (w *Witness) Held() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.heldLocked(time.Now())
}

func (w *Witness) heldLocked(now time.Time) bool {
	return w.wanted && !w.renewed.IsZero() && now.Sub(w.renewed) < w.timing.RenewDeadline
}

// Changed signals that Held may have changed.
func (w *Witness) Changed() <-chan struct{} { return w.changed }

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Run takes and renews the Lease while it is wanted, until ctx ends. It
// does not release the Lease as it stops: an agent stops when its node
// goes, and a Lease released by a stopping holder would let the peer take
// it while the holder still answers.
func (w *Witness) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithValues("lease", w.name)
	timer := time.NewTimer(0)
	defer timer.Stop()
	told := false // Held as the readers were last told
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-w.wake:
		}
		next := w.round(ctx, logger)
		if held := w.Held(); held != told {
			// Also a vote that lapsed since the last round, unrenewed.
			told = held
			signal(w.changed)
		}
		w.mu.Lock()
		if w.renewed.IsZero() {
			// Not holding: nothing to lose when the deadline passes.
		} else if d := w.timing.RenewDeadline - time.Since(w.renewed); d > 0 && d < next {
			// Wake as the vote lapses, to tell the readers.
			next = d
		}
		w.mu.Unlock()
		timer.Reset(next)
	}
}

// round looks at the Lease once, takes or renews it when it may, and
// returns when to look again.
func (w *Witness) round(ctx context.Context, logger klog.Logger) time.Duration {
	w.mu.Lock()
	wanted := w.wanted
	w.mu.Unlock()
	if !wanted {
		w.mu.Lock()
		w.renewed, w.seen = time.Time{}, ""
		w.mu.Unlock()
		return time.Hour // Want wakes Run
	}
	rctx, cancel := context.WithTimeout(ctx, w.timing.RequestTimeout)
	defer cancel()
	start := time.Now()
	lease, err := w.leases.Get(rctx, w.name)
	if err != nil {
		w.fail(logger, fmt.Errorf("reading the witness Lease: %w", err))
		return w.timing.RetryEvery
	}
	holder := ""
	if lease.Spec.HolderIdentity != nil {
		holder = *lease.Spec.HolderIdentity
	}
	w.mu.Lock()
	if lease.ResourceVersion != w.seen {
		w.seen, w.seenAt = lease.ResourceVersion, start
	}
	unchangedFor := start.Sub(w.seenAt)
	w.mu.Unlock()
	mine := holder == w.identity
	if !mine && holder != "" && unchangedFor < w.timing.Duration {
		// Held by the peer, which renews it: leave it.
		w.mu.Lock()
		w.renewed = time.Time{}
		w.mu.Unlock()
		return w.timing.RetryEvery
	}
	next := lease.DeepCopy()
	now := metav1.NewMicroTime(start)
	secs := int32(w.timing.Duration / time.Second) //nolint:gosec // seconds of a Lease, a few
	next.Spec.HolderIdentity, next.Spec.LeaseDurationSeconds, next.Spec.RenewTime = &w.identity, &secs, &now
	if !mine {
		next.Spec.AcquireTime = &now
		transitions := int32(0)
		if lease.Spec.LeaseTransitions != nil {
			transitions = *lease.Spec.LeaseTransitions + 1
		}
		next.Spec.LeaseTransitions = &transitions
	}
	// The update carries the resourceVersion read: if the peer renewed in
	// between, it fails with a conflict and the peer keeps the Lease.
	updated, err := w.leases.Update(rctx, next)
	if err != nil {
		if apierrors.IsConflict(err) {
			return w.timing.RetryEvery
		}
		w.fail(logger, fmt.Errorf("writing the witness Lease: %w", err))
		return w.timing.RetryEvery
	}
	w.mu.Lock()
	w.renewed, w.seen, w.seenAt = start, updated.ResourceVersion, start
	w.lastErr = ""
	w.mu.Unlock()
	if !mine {
		logger.Info("Holding the L2 witness: with one of two agents lost, this node keeps the majority", "previous", holder)
	}
	return w.timing.RenewEvery
}

// fail logs a new error once; the vote lapses by itself at the deadline.
func (w *Witness) fail(logger klog.Logger, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if msg := err.Error(); msg != w.lastErr {
		w.lastErr = msg
		if errors.Is(err, context.Canceled) {
			return
		}
		logger.Error(err, "The L2 witness cannot be used; a two-node cluster that loses a node falls silent until the node is not Ready")
	}
}
