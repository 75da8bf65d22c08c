package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// election is what a stopping replica needs of the leader election that
// upstream's command runs: upstream runs it on a context that never ends and
// does not release the Lease, so a new leader would wait the Lease duration.
// On a stop the replica instead closes the gate (upstream's elector can no
// longer write the Lease), releases the Lease if it leads, and, when asked,
// tells whether another replica is alive: one holds the Lease, or takes it
// over.
type election struct {
	namespace, name string
	retryPeriod     time.Duration
	client          kubernetes.Interface // not behind the gate
	gate            *leaseGate
	leading         atomic.Bool // set once a controller is started: only the leader starts them
	released        bool        // this replica released the Lease (set by stopElecting)
}

// leaseGate holds back writes to one Lease once closed: they never return.
// An error would not do: upstream's elector, failing to renew for its renew
// deadline, ends the process with exit code 1 (in the middle of the stop),
// while a parked write keeps it waiting until the process exits.
type leaseGate struct {
	path   string // /apis/coordination.k8s.io/v1/namespaces/NS/leases
	name   string
	closed atomic.Bool
}

func newLeaseGate(namespace, name string) *leaseGate {
	return &leaseGate{path: "/apis/coordination.k8s.io/v1/namespaces/" + namespace + "/leases", name: name}
}

// wrap is a transport wrapper for the clients that upstream's elector builds.
func (g *leaseGate) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if g.closed.Load() && g.blocks(req) {
			select {} // until the process exits
		}
		return rt.RoundTrip(req)
	})
}

// blocks reports whether req writes the gated Lease (create, update, patch,
// delete).
func (g *leaseGate) blocks(req *http.Request) bool {
	if req.Method == http.MethodGet || req.Method == http.MethodHead {
		return false
	}
	p := strings.TrimSuffix(req.URL.Path, "/")
	return p == g.path || p == g.path+"/"+g.name
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// stopElecting closes the gate (upstream's elector can no longer renew, take
// or re-take the Lease) and, if this replica leads, releases the Lease, so
// that another replica leads within one retry period instead of the Lease
// duration.
func (e *election) stopElecting(ctx context.Context) {
	logger := klog.FromContext(ctx)
	e.gate.closed.Store(true)
	if !e.leading.Load() {
		return
	}
	if err := e.release(ctx); err != nil {
		logger.Error(err, "Cannot release the leader-election Lease", "lease", klog.KRef(e.namespace, e.name))
		return
	}
	e.released = true
	logger.Info("Released the leader-election Lease", "lease", klog.KRef(e.namespace, e.name))
}

// othersRun reports, after stopElecting, whether another replica is known to
// run: it holds a valid Lease, or (when this replica released it) takes it
// over within twice the retry period and a second. Errors count as "none
// known", the safe answer: routers then keep this replica's routes.
func (e *election) othersRun(ctx context.Context) bool {
	logger := klog.FromContext(ctx)
	leases := e.client.CoordinationV1().Leases(e.namespace)
	if !e.released {
		lease, err := leases.Get(ctx, e.name, metav1.GetOptions{})
		if err != nil {
			logger.Error(err, "Cannot read the leader-election Lease", "lease", klog.KRef(e.namespace, e.name))
			return false
		}
		return !e.leading.Load() && heldByLiveReplica(lease, time.Now())
	}
	// The other replicas try every retry period (with up to 20% jitter).
	waitFor := 2*e.retryPeriod + time.Second
	wctx, cancel := context.WithTimeout(ctx, waitFor)
	defer cancel()
	var holder string
	err := wait.PollUntilContextCancel(wctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		lease, err := leases.Get(ctx, e.name, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // retried until the wait ends
		}
		holder = ptr.Deref(lease.Spec.HolderIdentity, "")
		return holder != "", nil
	})
	if err != nil {
		logger.Info("No other replica took the leader-election Lease over", "waited", waitFor)
		return false
	}
	logger.Info("Another replica took the leader-election Lease over", "holder", holder)
	return true
}

// release empties the Lease the way client-go's ReleaseOnCancel does (no
// holder, a one-second duration), if nobody else holds it. The update
// carries the read resourceVersion, so a write that raced it is not undone.
func (e *election) release(ctx context.Context) error {
	leases := e.client.CoordinationV1().Leases(e.namespace)
	for range 3 {
		lease, err := leases.Get(ctx, e.name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
		if ptr.Deref(lease.Spec.HolderIdentity, "") == "" {
			return nil
		}
		now := metav1.NewMicroTime(time.Now())
		lease.Spec.HolderIdentity = ptr.To("")
		lease.Spec.LeaseDurationSeconds = ptr.To[int32](1)
		lease.Spec.RenewTime = &now
		lease.Spec.AcquireTime = &now
		_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
		if !apierrors.IsConflict(err) {
			if err != nil {
				return fmt.Errorf("update: %w", err)
			}
			return nil
		}
	}
	return errors.New("update: the Lease kept changing")
}

// heldByLiveReplica reports whether lease has a holder whose last renewal is
// younger than the lease duration.
func heldByLiveReplica(lease *coordinationv1.Lease, now time.Time) bool {
	s := lease.Spec
	if ptr.Deref(s.HolderIdentity, "") == "" || s.RenewTime == nil || s.LeaseDurationSeconds == nil {
		return false
	}
	return now.Before(s.RenewTime.Add(time.Duration(*s.LeaseDurationSeconds) * time.Second))
}
