package agent

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
)

// TestFreshness: a failed list, a failed watch or a watch's error event
// breaks the view, stale once that has lasted; the next list or watch the
// API server answers mends it.
func TestFreshness(t *testing.T) {
	f := newFreshness(klog.Background())
	f.after = 0 // stale as soon as broken
	down := errors.New("connection refused")
	var listErr, watchErr error
	var fake *watch.FakeWatcher
	list := f.list(func(context.Context, metav1.ListOptions) (runtime.Object, error) { return &metav1.Status{}, listErr })
	watchFn := f.watch(func(context.Context, metav1.ListOptions) (watch.Interface, error) {
		if watchErr != nil {
			return nil, watchErr
		}
		fake = watch.NewFake() // one per watch: each is read by its own filter
		return fake, nil
	})
	ctx := t.Context()
	steps := []struct {
		name  string
		do    func()
		stale bool
	}{
		{"a list answered", func() { _, _ = list(ctx, metav1.ListOptions{}) }, false},
		{"a list failed", func() { listErr = down; _, _ = list(ctx, metav1.ListOptions{}) }, true},
		{"a watch answered", func() { listErr = nil; _, _ = watchFn(ctx, metav1.ListOptions{}) }, false},
		{"the watch's error event", func() {
			w, _ := watchFn(ctx, metav1.ListOptions{})
			go fake.Error(&metav1.Status{Message: "http2: client connection lost"})
			<-w.ResultChan()
		}, true},
		{"a watch failed", func() { watchErr = down; _, _ = watchFn(ctx, metav1.ListOptions{}) }, true},
		{"a list answered again", func() { _, _ = list(ctx, metav1.ListOptions{}) }, false},
	}
	for _, s := range steps {
		s.do()
		time.Sleep(time.Millisecond) // past f.after
		if got := f.Stale(); got != s.stale {
			t.Errorf("after %s: stale %t, want %t", s.name, got, s.stale)
		}
	}
}
