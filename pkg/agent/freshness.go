package agent

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// StaleAfter is how long the agent's view of the API server may have been
// cut off (a watch failing and the API server unreachable) before the
// agent says its view is stale (AgentEnv.ViewStale): a view that old may
// miss a Service, an endpoint or a node that every other agent sees, and
// an agent that decides from it could answer where the others chose
// another node. Short failures of a watch (an expired resource version,
// an API server restart) heal within seconds and stay below it.
const StaleAfter = 10 * time.Second

// probeEvery is how often a broken view checks whether the API server
// answers again.
const probeEvery = 2 * time.Second

// freshness tracks whether the agent's informers see the API server: a
// watch error marks the view broken, and from then on a GET of the
// agent's own Node every probeEvery tells when the API server answers
// again (the informers then list afresh within their backoff). A view
// that works costs no request; a watch that hangs silently is found by
// the client's HTTP/2 health check, which then fails it.
type freshness struct {
	get   func(ctx context.Context) error // one cheap request to the API server
	after time.Duration                   // StaleAfter
	every time.Duration                   // probeEvery
	wake  chan struct{}

	mu     sync.Mutex
	broken time.Time // when the view broke; zero while it works
}

func newFreshness(c *Client, node string) *freshness {
	return &freshness{
		get:   func(ctx context.Context) error { return c.Nodes.Get(ctx, node, &v1.Node{}) },
		after: StaleAfter, every: probeEvery,
		wake: make(chan struct{}, 1),
	}
}

// watchError is the informers' watch error handler: the view is broken
// from the first error on.
func (f *freshness) watchError(ctx context.Context, r *cache.Reflector, err error) {
	cache.DefaultWatchErrorHandler(ctx, r, err)
	f.mu.Lock()
	if f.broken.IsZero() {
		f.broken = time.Now()
	}
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// Stale reports whether the view has been broken for longer than
// StaleAfter.
func (f *freshness) Stale() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.broken.IsZero() && time.Since(f.broken) > f.after
}

// Run probes the API server while the view is broken, until ctx ends.
func (f *freshness) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.wake:
		}
		logger.V(2).Info("A watch of the API server failed: probing it until it answers")
		for f.brokenSince() != (time.Time{}) {
			select {
			case <-ctx.Done():
				return
			case <-time.After(f.every):
			}
			rctx, cancel := context.WithTimeout(ctx, f.every)
			err := f.get(rctx)
			cancel()
			if err == nil {
				f.mu.Lock()
				since := f.broken
				f.broken = time.Time{}
				f.mu.Unlock()
				logger.Info("The API server answers again", "after", time.Since(since).Round(time.Second))
			} else if f.Stale() {
				logger.V(2).Info("The API server still does not answer: this agent's view is stale", "err", err)
			}
		}
	}
}

func (f *freshness) brokenSince() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.broken
}
