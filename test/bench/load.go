package bench

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metal-ccm/metal-ccm/test/framework"
)

// parallel calls fn for 0..n-1 from workers goroutines and returns the first
// error; after an error no new call starts.
func parallel(ctx context.Context, n, workers int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		next     atomic.Int64
		once     sync.Once
		firstErr error
		wg       sync.WaitGroup
	)
	for range min(workers, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := fn(ctx, i); err != nil {
					once.Do(func() { firstErr = err; cancel() })
					return
				}
			}
		})
	}
	wg.Wait()
	return firstErr
}

// nodeSet names n nodes prefix-00000... with consecutive addresses from base.
func nodeSet(prefix string, base netip.Addr, n int) (names []string, ips []netip.Addr) {
	ip := base
	for i := range n {
		names = append(names, fmt.Sprintf("%s-%05d", prefix, i))
		ips = append(ips, ip)
		ip = ip.Next()
	}
	return names, ips
}

// registerNodes registers the nodes as kubelets would (framework.RegisterNode),
// workers at a time, and returns when each registration began.
func (e *env) registerNodes(ctx context.Context, names []string, ips []netip.Addr, ready bool) (map[string]time.Time, error) {
	began := make([]time.Time, len(names))
	err := parallel(ctx, len(names), harnessWorkers, func(ctx context.Context, i int) error {
		began[i] = time.Now()
		_, err := framework.RegisterNode(ctx, e.cs, names[i], ready, ips[i].String())
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	out := make(map[string]time.Time, len(names))
	for i, n := range names {
		out[n] = began[i]
	}
	return out, nil
}

// deleteNodes deletes the nodes and waits until the watch has seen them go.
func (e *env) deleteNodes(ctx context.Context, names []string) error {
	return e.deleteAll(ctx, "nodes", names,
		func(ctx context.Context, key string) error {
			return e.cs.CoreV1().Nodes().Delete(ctx, key, metav1.DeleteOptions{})
		},
		func() int { return e.w.nodesLeft(names) })
}

// deleteServices deletes the Services and waits until the watch has seen
// them go (the harness deletes only Services that had an address).
func (e *env) deleteServices(ctx context.Context, keys []string) error {
	return e.deleteAll(ctx, "Services", keys,
		func(ctx context.Context, key string) error {
			ns, name := splitKey(key)
			return e.cs.CoreV1().Services(ns).Delete(ctx, name, metav1.DeleteOptions{})
		},
		func() int { left, _ := e.w.ipTimes(keys); return len(left) })
}

// deleteAll deletes every key with del and waits until left says none is
// left.
func (e *env) deleteAll(ctx context.Context, what string, keys []string, del func(context.Context, string) error, left func() int) error {
	err := parallel(ctx, len(keys), harnessWorkers, func(ctx context.Context, i int) error {
		if err := del(ctx, keys[i]); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("bench: delete %s %s: %w", what, keys[i], err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return e.waitFor(ctx, what+" deleted", func() (bool, string) {
		n := left()
		return n == 0, fmt.Sprintf("%d %s left", n, what)
	})
}

// serviceKeys names n Services prefix-00000... in namespace ns.
func serviceKeys(ns, prefix string, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s/%s-%05d", ns, prefix, i)
	}
	return keys
}

// splitKey splits namespace/name; a key without a slash is a node name.
func splitKey(key string) (ns, name string) {
	ns, name, ok := strings.Cut(key, "/")
	if !ok {
		return "", key
	}
	return ns, name
}

// createServices creates LoadBalancer Services (externalTrafficPolicy Local
// when local) and returns when each creation began.
func (e *env) createServices(ctx context.Context, keys []string, local bool, extra ...framework.ServiceOption) (map[string]time.Time, error) {
	nss := map[string]bool{}
	for _, k := range keys {
		ns, _ := splitKey(k)
		if !nss[ns] {
			nss[ns] = true
			if err := framework.EnsureNamespace(ctx, e.cs, ns); err != nil {
				return nil, fmt.Errorf("bench: %w", err)
			}
		}
	}
	began := make([]time.Time, len(keys))
	err := parallel(ctx, len(keys), harnessWorkers, func(ctx context.Context, i int) error {
		began[i] = time.Now()
		return e.createService(ctx, keys[i], local, extra...)
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string]time.Time, len(keys))
	for i, k := range keys {
		out[k] = began[i]
	}
	return out, nil
}

// createService creates one LoadBalancer Service with one port.
func (e *env) createService(ctx context.Context, key string, local bool, extra ...framework.ServiceOption) error {
	ns, name := splitKey(key)
	// The NodePort range has 2,768 ports; the steady state has up to
	// 10,000 Services.
	opts := []framework.ServiceOption{framework.WithoutNodePorts}
	if local {
		opts = append(opts, framework.Local)
	}
	svc := framework.LoadBalancerService(ns, name, append(opts, extra...)...)
	if _, err := e.cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("bench: create Service %s: %w", key, err)
	}
	return nil
}

// endpointSlice is the slice of a Service with one ready endpoint on node,
// as the EndpointSlice controller would write it for one pod there.
func endpointSlice(key, node string, i int) *discoveryv1.EndpointSlice {
	ns, name := splitKey(key)
	// Pod addresses from the default cluster CIDR, 198.19.0.0/16.
	return framework.EndpointSlice(ns, name, "bench", framework.Endpoint{Address: fmt.Sprintf("198.19.%d.%d", i/250, i%250+1), Node: node})
}
