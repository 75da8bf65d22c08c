// Package lbcontroller is the service controller for a provider whose load
// balancers follow the cluster's nodes by themselves (the metal provider's
// announcer) and that frees what a Service held when the Service is deleted.
// It does what the upstream service controller does for a Service of type
// LoadBalancer (finalizer, EnsureLoadBalancer, status,
// EnsureLoadBalancerDeleted on cleanup), with the same finalizer and Event
// reasons, but watches no nodes: upstream's node sync costs Services x nodes
// CPU per node event and keeps a node list per Service, work that such a
// provider does not need. EnsureLoadBalancer is given no nodes, and the
// status and finalizer are written together. A provider that knows when a
// refused Service may now be served asks for its sync with Requeue instead
// of writing to the Service.
package lbcontroller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/api"
	servicehelper "k8s.io/cloud-provider/service/helpers"
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/lbrule"
)

// Retry delays of a failed sync, as upstream's service controller.
const (
	minRetryDelay = 5 * time.Second
	maxRetryDelay = 300 * time.Second
)

// Event reasons, those of upstream's service controller.
const (
	ReasonEnsured    = "EnsuredLoadBalancer"
	ReasonDeleted    = "DeletedLoadBalancer"
	ReasonSyncFailed = "SyncLoadBalancerFailed"
)

// EventCacheEntries is the size of the Event correlator's caches of the
// service controller's and the provider's Event broadcasters (client-go's
// default, 4,096 per cache, held 11 MB at 10,000 Services): a repeated
// Event of one of the last 512 objects is still counted, not sent again.
const EventCacheEntries = 512

// EventComponent is the source of the Events, as upstream's.
const EventComponent = "service-controller"

// Controller keeps each Service of type LoadBalancer that its rule wants
// and its load balancer in step.
type Controller struct {
	balancer    cloudprovider.LoadBalancer
	rule        lbrule.Rule
	client      kubernetes.Interface // writes Services
	events      kubernetes.Interface // writes Events
	services    corelisters.ServiceLister
	synced      cache.InformerSynced
	queue       workqueue.TypedRateLimitingInterface[string]
	clusterName string
	recorder    record.EventRecorder

	mu      sync.Mutex
	written map[string]string    // Service key -> resourceVersion of our last write to it
	served  map[string]types.UID // Service key -> UID, of a class the rule owns, seen with the finalizer
	outputs map[string]bool      // annotations the provider writes itself (New)
}

// New builds a controller over the Service informer; Run starts it. It
// serves the Services rule wants, the rule the provider uses too. Events
// are written with their own client (events), so that their rate limit does
// not slow the Service writes; it may be client. outputs are the
// annotations the provider writes on Services itself, for people to read (a
// status): a change of those alone needs no sync.
func New(balancer cloudprovider.LoadBalancer, rule lbrule.Rule, client, events kubernetes.Interface, services coreinformers.ServiceInformer, clusterName string, outputs ...string) (*Controller, error) {
	registerMetrics()
	c := &Controller{
		balancer:    balancer,
		rule:        rule,
		client:      client,
		events:      events,
		services:    services.Lister(),
		clusterName: clusterName,
		written:     map[string]string{},
		served:      map[string]types.UID{},
		outputs:     map[string]bool{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](minRetryDelay, maxRetryDelay),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "service"}),
	}
	for _, k := range outputs {
		c.outputs[k] = true
	}
	reg, err := services.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) {
			if svc, ok := o.(*v1.Service); ok {
				c.note(svc)
				if c.rule.Wants(svc) || c.needsCleanup(svc) {
					c.enqueue(svc)
				}
			}
		},
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*v1.Service)
			s, ok2 := cur.(*v1.Service)
			if !ok1 || !ok2 {
				return
			}
			c.note(o)
			c.note(s)
			if needsSync(c.rule, c.outputs, o, s) || c.needsCleanup(s) {
				c.enqueue(s)
			}
		},
		// A deletion shows first as a deletion timestamp (the finalizer
		// holds the Service): the update path cleans up.
	})
	if err != nil {
		return nil, fmt.Errorf("new service controller: %w", err)
	}
	c.synced = reg.HasSynced
	return c, nil
}

func (c *Controller) enqueue(svc *v1.Service) { c.queue.Add(Key(svc)) }

// Requeue asks for a sync of the Service with this key (see Key) now, ahead
// of any back-off. A provider calls it when what refused a Service may have
// changed without the Service changing: an address was freed, the config was
// reloaded, the Service lost an address another holds. The request is
// in-process: nothing is written to the Service. A key of a Service that
// wants no load balancer costs one sync that writes nothing; after Run
// ends, Requeue does nothing.
func (c *Controller) Requeue(key string) { c.queue.Add(key) }

// Busy reports whether Services wait for a sync (not counting those
// waiting for their retry's back-off).
func (c *Controller) Busy() bool { return c.queue.Len() > 0 }

// Run syncs Services with the given number of workers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrashWithContext(ctx)
	defer c.queue.ShutDown()
	logger := klog.FromContext(ctx).WithName("service-controller")
	ctx = klog.NewContext(ctx, logger)

	bc := record.NewBroadcaster(record.WithContext(ctx), record.WithCorrelatorOptions(record.CorrelatorOptions{LRUCacheSize: EventCacheEntries}))
	bc.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.events.CoreV1().Events("")})
	defer bc.Shutdown()
	c.recorder = bc.NewRecorder(scheme.Scheme, v1.EventSource{Component: EventComponent})

	logger.Info("Starting service controller (no node events)")
	defer logger.Info("Shutting down service controller")
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.synced) {
		return
	}
	for range max(workers, 1) {
		go wait.UntilWithContext(ctx, c.worker, time.Second)
	}
	<-ctx.Done()
}

func (c *Controller) worker(ctx context.Context) {
	for c.next(ctx) {
	}
}

func (c *Controller) next(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	err := c.sync(ctx, key)
	if err == nil {
		c.queue.Forget(key)
		return true
	}
	var re *api.RetryError
	if errors.As(err, &re) {
		klog.FromContext(ctx).V(2).Info("Service sync asks for a retry", "service", key, "after", re.RetryAfter(), "err", err)
		c.queue.AddAfter(key, re.RetryAfter())
		return true
	}
	klog.FromContext(ctx).Error(err, "Service sync failed; retrying with back-off", "service", key)
	c.queue.AddRateLimited(key)
	return true
}

// sync brings one Service's load balancer in step with the Service.
func (c *Controller) sync(ctx context.Context, key string) error {
	syncs.Inc()
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil //nolint:nilerr // a bad key never becomes good
	}
	svc, err := c.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.forget(key)
		return nil // gone: it had no finalizer, and the provider saw the deletion
	}
	if err != nil {
		return fmt.Errorf("sync service %s: %w", key, err)
	}
	if c.stale(key, svc) {
		// The cache has not seen our last write yet; that write's own
		// event brings the Service back here.
		return nil
	}
	switch {
	case !c.ours(svc):
		// Another implementation's (a Requeue may name any key): no
		// status, no finalizer, no Event from here.
		return nil
	case !c.rule.Wants(svc):
		// (A Service being deleted without our finalizer gets none: it
		// only waits for others' finalizers.)
		err = c.cleanup(ctx, svc)
	default:
		err = c.ensure(ctx, svc)
	}
	if err != nil {
		var re *api.RetryError
		if !errors.As(err, &re) {
			c.recorder.Eventf(svc, v1.EventTypeWarning, ReasonSyncFailed, "Error syncing load balancer: %v", err)
		}
		return err
	}
	return nil
}

// stale reports whether svc is older than our last write to it.
func (c *Controller) stale(key string, svc *v1.Service) bool {
	c.mu.Lock()
	rv, ok := c.written[key]
	c.mu.Unlock()
	if !ok {
		return false
	}
	cmp, err := resourceversion.CompareResourceVersion(svc.ResourceVersion, rv)
	return err == nil && cmp < 0
}

// wrote notes the resourceVersion of what a write returned.
func (c *Controller) wrote(key string, svc *v1.Service) {
	c.mu.Lock()
	c.written[key] = svc.ResourceVersion
	c.mu.Unlock()
}

func (c *Controller) forget(key string) {
	c.mu.Lock()
	delete(c.written, key)
	delete(c.served, key)
	c.mu.Unlock()
}

// ensure asks the provider for the Service's load balancer, then writes
// the status and the cleanup finalizer in one request (the status
// subresource takes the finalizer too): one write per Service where upstream
// makes two. A Service is thus never seen with an address and without the
// finalizer. What the provider took for a Service deleted before that write
// is its to free when it sees the deletion (the metal provider does); a
// refused Service gets no finalizer, as it holds nothing.
func (c *Controller) ensure(ctx context.Context, svc *v1.Service) error {
	status, err := c.balancer.EnsureLoadBalancer(ctx, c.clusterName, svc, nil)
	if errors.Is(err, cloudprovider.ImplementedElsewhere) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("ensure load balancer: %w", err)
	}
	if status == nil {
		return errors.New("ensure load balancer: the provider returned no status")
	}
	sameStatus := servicehelper.LoadBalancerStatusEqual(&svc.Status.LoadBalancer, status)
	if sameStatus && servicehelper.HasLBFinalizer(svc) {
		return nil
	}
	updated := svc.DeepCopy()
	if !servicehelper.HasLBFinalizer(svc) {
		updated.Finalizers = append(updated.Finalizers, servicehelper.LoadBalancerCleanupFinalizer)
	}
	updated.Status.LoadBalancer = *status
	got, err := servicehelper.PatchService(c.client.CoreV1(), svc, updated)
	if err != nil {
		return fmt.Errorf("update load balancer status and finalizer: %w", err)
	}
	c.wrote(Key(got), got)
	if !sameStatus {
		c.recorder.Event(svc, v1.EventTypeNormal, ReasonEnsured, "Ensured load balancer")
	}
	return nil
}

// cleanup frees the Service's load balancer, then clears its status and
// removes the finalizer in one request.
func (c *Controller) cleanup(ctx context.Context, svc *v1.Service) error {
	if !servicehelper.HasLBFinalizer(svc) {
		return nil // not ours, or cleaned up already
	}
	err := c.balancer.EnsureLoadBalancerDeleted(ctx, c.clusterName, svc)
	if err != nil && !errors.Is(err, cloudprovider.ImplementedElsewhere) {
		return fmt.Errorf("delete load balancer: %w", err)
	}
	updated := svc.DeepCopy()
	updated.Finalizers = slices.DeleteFunc(updated.Finalizers, func(f string) bool { return f == servicehelper.LoadBalancerCleanupFinalizer })
	updated.Status.LoadBalancer = v1.LoadBalancerStatus{}
	if _, err := servicehelper.PatchService(c.client.CoreV1(), svc, updated); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("clear load balancer status and finalizer: %w", err)
	}
	c.forget(Key(svc))
	c.recorder.Event(svc, v1.EventTypeNormal, ReasonDeleted, "Deleted load balancer")
	return nil
}
