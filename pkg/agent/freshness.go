package agent

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
)

// StaleAfter is how long the agent's view of the API server may have been
// cut off (its lists and watches failing) before the agent says its view
// is stale (AgentEnv.ViewStale): a view that old may miss a Service, an
// endpoint or a node that every other agent sees, and an agent that
// decides from it could answer where the others chose another node. Short
// failures of a watch (an API server restart) heal within seconds and stay
// below it.
const StaleAfter = 10 * time.Second

// freshness tracks whether the agent's informers reach the API server, from
// what their lists and watches see: a list or watch that fails, or a
// watch that ends with an error (the client's HTTP/2 health check finds
// a hung connection that way), breaks the view; the next list or watch
// the API server answers mends it. The informers retry by themselves, so
// this costs no request of its own.
type freshness struct {
	logger klog.Logger
	after  time.Duration // StaleAfter

	mu     sync.Mutex
	broken time.Time // when the view broke; zero while it works
}

func newFreshness(logger klog.Logger) *freshness {
	return &freshness{logger: logger, after: StaleAfter}
}

// Stale reports whether the view has been broken for longer than
// StaleAfter.
func (f *freshness) Stale() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.broken.IsZero() && time.Since(f.broken) > f.after
}

// answered records a list or watch's outcome.
func (f *freshness) answered(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case err != nil && f.broken.IsZero():
		f.broken = time.Now()
		f.logger.V(2).Info("The API server does not answer this agent's informers", "err", err)
	case err == nil && !f.broken.IsZero():
		f.logger.Info("The API server answers this agent's informers again", "after", time.Since(f.broken).Round(time.Second))
		f.broken = time.Time{}
	}
}

// list wraps an informer's list.
func (f *freshness) list(l func(context.Context, metav1.ListOptions) (runtime.Object, error)) func(context.Context, metav1.ListOptions) (runtime.Object, error) {
	return func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		obj, err := l(ctx, opts)
		if ctx.Err() == nil {
			f.answered(err)
		}
		return obj, err
	}
}

// watch wraps an informer's watch: its errors, and its result's error
// events.
func (f *freshness) watch(w func(context.Context, metav1.ListOptions) (watch.Interface, error)) func(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		wi, err := w(ctx, opts)
		if ctx.Err() == nil {
			f.answered(err)
		}
		if err != nil {
			return wi, err
		}
		return watch.Filter(wi, func(e watch.Event) (watch.Event, bool) {
			if e.Type == watch.Error && ctx.Err() == nil {
				f.answered(apiError{e.Object})
			}
			return e, true
		}), nil
	}
}

// apiError is a watch's error event as an error.
type apiError struct{ obj runtime.Object }

func (e apiError) Error() string {
	if s, ok := e.obj.(*metav1.Status); ok {
		return s.Message
	}
	return "a watch error event"
}
