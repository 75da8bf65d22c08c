package agent

import (
	"context"
	"sync"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/metal-ccm/metal-ccm/pkg/announcer"
	"github.com/metal-ccm/metal-ccm/pkg/cachetrim"
)

// informers are the announcer's informers over c, as a shared informer
// factory would build them but without one: client-go's factory links every
// API group's informers and clients (client.go says why that matters). They
// have no namespace index (the announcer gets Services by key and lists
// them all) and drop managedFields before caching. Their lists and watches
// go to fresh, which tells from them whether the view is fresh.
func (c *Client) informers(fresh *freshness) announcer.Informers {
	return announcer.Informers{
		Services:       newInformer(c.Services, &v1.Service{}, fresh),
		Nodes:          newInformer(c.Nodes, &v1.Node{}, fresh),
		EndpointSlices: newInformer(c.EndpointSlices, &discoveryv1.EndpointSlice{}, fresh),
	}
}

// newInformer is an informer of all of r's objects; example is one of them
// (its type is what the informer expects).
func newInformer(r Resource, example runtime.Object, fresh *freshness) cache.SharedIndexInformer {
	lw := &cache.ListWatch{ListWithContextFunc: fresh.list(r.List), WatchFuncWithContext: fresh.watch(r.Watch)}
	// An empty map, not none: AddIndexers (the announcer's index of
	// EndpointSlices) writes into it.
	inf := cache.NewSharedIndexInformerWithOptions(lw, example, cache.SharedIndexInformerOptions{Indexers: cache.Indexers{}})
	// Fails only once the informer runs, and it runs after this.
	_ = inf.SetTransform(cachetrim.Transform)
	return inf
}

// runInformers runs inf until ctx ends; the WaitGroup is done when all
// have stopped.
func runInformers(ctx context.Context, inf announcer.Informers) *sync.WaitGroup {
	var wg sync.WaitGroup
	for _, i := range []cache.SharedIndexInformer{inf.Services, inf.Nodes, inf.EndpointSlices} {
		wg.Go(func() { i.RunWithContext(ctx) })
	}
	return &wg
}
