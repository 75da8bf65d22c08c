// Package objcache is what the power-state sources that read the cluster
// (metal3, rufio) share: one informer on their resource, in one namespace or
// all, whose cache answers every question. A question costs no API request:
// the node lifecycle controller may ask about every NotReady node every few
// seconds, and the objects change only when their controllers write them.
package objcache

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/powerstate"
)

var (
	// ErrNotSynced is returned while the cache has not listed the objects
	// yet (or cannot: the CRD is not installed, the rights are missing).
	ErrNotSynced = errors.New("the cache of the objects has not synced yet")
	// ErrNotFound is returned for an object the synced cache does not hold.
	ErrNotFound = errors.New("not found")
)

// Cache holds the objects of one resource. The zero of *Cache (nil) is a
// cache without a cluster client: every Get is powerstate.ErrNoCluster.
type Cache struct {
	informer cache.SharedIndexInformer
	cancel   context.CancelFunc

	mu   sync.Mutex
	seen map[string]bool // namespace/name of every object the cache held
}

// Start starts an informer on gvr in namespace ("" for all) with env's
// client, until env's context ends or Close. Without a client it returns
// nil. It does not wait for the first list: until then Get says
// ErrNotSynced. watchErrors counts the informer's failed lists and watches.
func Start(env powerstate.Env, gvr schema.GroupVersionResource, namespace string, watchErrors func()) *Cache {
	if env.Dynamic == nil {
		return nil
	}
	ctx, cancel := context.WithCancel(env.Ctx())
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(env.Dynamic, 0, namespace, nil)
	inf := f.ForResource(gvr).Informer()
	c := &Cache{informer: inf, cancel: cancel, seen: map[string]bool{}}
	logger := klog.FromContext(ctx).WithValues("resource", gvr.String(), "namespace", namespace)
	_ = inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		watchErrors()
		cache.DefaultWatchErrorHandler(ctx, r, err)
	})
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.remember,
		UpdateFunc: func(_, o any) { c.remember(o) },
	})
	logger.V(2).Info("Watching the objects of a power-state source")
	go inf.RunWithContext(ctx)
	return c
}

func (c *Cache) remember(obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen[u.GetNamespace()+"/"+u.GetName()] = true
}

// Get is the object namespace/name from the cache: powerstate.ErrNoCluster,
// ErrNotSynced or ErrNotFound when it cannot be had. The caller names the
// object in its error.
func (c *Cache) Get(namespace, name string) (*unstructured.Unstructured, error) {
	if c == nil {
		return nil, powerstate.ErrNoCluster
	}
	if !c.informer.HasSynced() {
		return nil, ErrNotSynced
	}
	obj, ok, err := c.informer.GetStore().GetByKey(namespace + "/" + name)
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	if !ok {
		return nil, ErrNotFound
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("%w: a %T in the cache", ErrNotSynced, obj)
	}
	return u, nil
}

// WaitForSync blocks until the cache has listed the objects or ctx ends,
// and says whether it has.
func (c *Cache) WaitForSync(ctx context.Context) bool {
	return c != nil && cache.WaitForCacheSync(ctx.Done(), c.informer.HasSynced)
}

// Seen says whether the cache held namespace/name at some time since Start.
func (c *Cache) Seen(namespace, name string) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen[namespace+"/"+name]
}

// Close stops the informer.
func (c *Cache) Close() {
	if c != nil {
		c.cancel()
	}
}
