package bench

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/metal-ccm/metal-ccm/test/framework"
)

// pollInterval is how often waits look at what the watches recorded. The
// times are those of the watch events, not of the polls.
const pollInterval = 50 * time.Millisecond

// watcher records when each node was first seen initialized and each Service
// first seen with an address, as the watch events arrive.
type watcher struct {
	mu       sync.Mutex
	nodeInit map[string]time.Time // node name -> first seen without the uninitialized taint
	nodes    map[string]bool      // nodes that exist
	svcIP    map[string]time.Time // namespace/name -> first seen with an ingress address
	svcAddr  map[string]netip.Addr
}

// startWatcher starts the harness's informers on nodes and Services and
// waits until they have synced.
func startWatcher(ctx context.Context, cs kubernetes.Interface) (*watcher, error) {
	w := &watcher{
		nodeInit: map[string]time.Time{}, nodes: map[string]bool{},
		svcIP: map[string]time.Time{}, svcAddr: map[string]netip.Addr{},
	}
	f := informers.NewSharedInformerFactory(cs, 0)
	nodeInf := f.Core().V1().Nodes().Informer()
	svcInf := f.Core().V1().Services().Informer()
	_, err := nodeInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    w.node,
		UpdateFunc: func(_, o any) { w.node(o) },
		DeleteFunc: w.nodeDeleted,
	})
	if err != nil {
		return nil, fmt.Errorf("bench: watch nodes: %w", err)
	}
	_, err = svcInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    w.service,
		UpdateFunc: func(_, o any) { w.service(o) },
		DeleteFunc: w.serviceDeleted,
	})
	if err != nil {
		return nil, fmt.Errorf("bench: watch Services: %w", err)
	}
	f.Start(ctx.Done())
	for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, fmt.Errorf("bench: watch %v: not synced", typ)
		}
	}
	return w, nil
}

func (w *watcher) node(o any) {
	n, ok := o.(*v1.Node)
	if !ok {
		return
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.nodes[n.Name] = true
	if _, seen := w.nodeInit[n.Name]; !seen && !framework.Uninitialized(n) {
		w.nodeInit[n.Name] = now
	}
}

// deleted unwraps the object of a delete event.
func deleted(o any) any {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		return d.Obj
	}
	return o
}

func (w *watcher) nodeDeleted(o any) {
	if n, ok := deleted(o).(*v1.Node); ok {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.nodes, n.Name)
		delete(w.nodeInit, n.Name)
	}
}

func (w *watcher) service(o any) {
	s, ok := o.(*v1.Service)
	if !ok || len(s.Status.LoadBalancer.Ingress) == 0 {
		return
	}
	ip, err := netip.ParseAddr(s.Status.LoadBalancer.Ingress[0].IP)
	if err != nil {
		return
	}
	now := time.Now()
	key := s.Namespace + "/" + s.Name
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, seen := w.svcIP[key]; !seen {
		w.svcIP[key] = now
	}
	w.svcAddr[key] = ip.Unmap()
}

func (w *watcher) serviceDeleted(o any) {
	if s, ok := deleted(o).(*v1.Service); ok {
		key := s.Namespace + "/" + s.Name
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.svcIP, key)
		delete(w.svcAddr, key)
	}
}

// initTimes returns when each named node was first seen initialized
// (absent: not yet).
func (w *watcher) initTimes(names []string) map[string]time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]time.Time, len(names))
	for _, n := range names {
		if t, ok := w.nodeInit[n]; ok {
			out[n] = t
		}
	}
	return out
}

// ipTimes returns when each Service was first seen with an address, and the
// address (absent: none yet).
func (w *watcher) ipTimes(keys []string) (map[string]time.Time, map[string]netip.Addr) {
	w.mu.Lock()
	defer w.mu.Unlock()
	times := make(map[string]time.Time, len(keys))
	addrs := make(map[string]netip.Addr, len(keys))
	for _, k := range keys {
		if t, ok := w.svcIP[k]; ok {
			times[k], addrs[k] = t, w.svcAddr[k]
		}
	}
	return times, addrs
}

// nodesLeft reports how many of the named nodes still exist.
func (w *watcher) nodesLeft(names []string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	left := 0
	for _, n := range names {
		if w.nodes[n] {
			left++
		}
	}
	return left
}

// waitInitialized waits until every named node has been seen initialized.
func (e *env) waitInitialized(ctx context.Context, names []string) error {
	return e.waitFor(ctx, "nodes initialized", func() (bool, string) {
		got := len(e.w.initTimes(names))
		return got == len(names), fmt.Sprintf("%d of %d nodes initialized", got, len(names))
	})
}

// waitAddresses waits until every Service has been seen with an address.
func (e *env) waitAddresses(ctx context.Context, keys []string) error {
	return e.waitFor(ctx, "Service addresses", func() (bool, string) {
		got, _ := e.w.ipTimes(keys)
		return len(got) == len(keys), fmt.Sprintf("%d of %d Services have an address", len(got), len(keys))
	})
}

// waitFor polls check until it holds, the CCM exits, or the run's timeout
// passes; the error then carries check's last word.
func (e *env) waitFor(ctx context.Context, what string, check func() (bool, string)) error {
	return e.waitForEvery(ctx, pollInterval, what, check)
}

// waitForEvery is waitFor with another interval.
func (e *env) waitForEvery(ctx context.Context, interval time.Duration, what string, check func() (bool, string)) error {
	ctx, cancel := context.WithTimeout(ctx, e.o.Timeout)
	defer cancel()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		done, last := check()
		if done {
			return nil
		}
		if err := e.ccmAlive(); err != nil {
			return fmt.Errorf("waiting for %s: %w; %s", what, err, last)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w; %s", what, ctx.Err(), last)
		case <-t.C:
		}
	}
}

// latest is the latest of the times.
func latest[K comparable](times map[K]time.Time) time.Time {
	var out time.Time
	for _, t := range times {
		if t.After(out) {
			out = t
		}
	}
	return out
}
