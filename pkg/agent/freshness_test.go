package agent

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// TestFreshness: a watch error marks the view broken, stale once that has
// lasted, and a probe that the API server answers makes it fresh again;
// a view that works sends no probe.
func TestFreshness(t *testing.T) {
	var up atomic.Bool
	var probes atomic.Int64
	f := &freshness{after: 50 * time.Millisecond, every: 10 * time.Millisecond, wake: make(chan struct{}, 1),
		get: func(context.Context) error {
			probes.Add(1)
			if up.Load() {
				return nil
			}
			return errors.New("connection refused")
		}}
	go f.Run(t.Context())
	time.Sleep(50 * time.Millisecond)
	if f.Stale() || probes.Load() != 0 {
		t.Fatalf("without a watch error: stale %t, %d probes; want fresh, none", f.Stale(), probes.Load())
	}
	r := cache.NewReflector(&cache.ListWatch{}, &v1.Node{}, cache.NewStore(cache.MetaNamespaceKeyFunc), 0)
	f.watchError(t.Context(), r, errors.New("watch failed"))
	eventually(t, "the view turns stale while the API server does not answer", f.Stale)
	up.Store(true)
	eventually(t, "the view is fresh again once the API server answers", func() bool { return !f.Stale() && f.brokenSince().IsZero() })
	n := probes.Load()
	time.Sleep(50 * time.Millisecond)
	if probes.Load() != n {
		t.Errorf("probes go on while the view works: %d, then %d", n, probes.Load())
	}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for begin := time.Now(); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Since(begin) > 10*time.Second {
			t.Fatalf("not within 10s: %s", what)
		}
	}
}
