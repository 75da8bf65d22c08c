package metal

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/ipam"
)

var (
	_ cloudprovider.LoadBalancer = (*Cloud)(nil)
	_ cloudprovider.InformerUser = (*Cloud)(nil)
)

// lbState is the leader's allocation state: the allocator, fed by the
// Service informer, and the Services waiting for a free address.
type lbState struct {
	alloc    *ipam.Allocator
	synced   cache.InformerSynced
	services corelisters.ServiceLister

	mu      sync.Mutex
	pending []ipam.Request  // waiting for a free address, oldest first
	failed  map[string]bool // refused Services, retried at once after a config reload
}

// LoadBalancer is offered when the config has pools. Without pools Services
// of type LoadBalancer are left to another implementation.
func (c *Cloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) {
	if len(c.state.Load().cfg.LoadBalancer.Pools) == 0 {
		return nil, false
	}
	return c, true
}

// SetInformers feeds the allocator from the Services' status, so that an
// address in use is never handed out again. It is called on the leader
// before the controllers start.
func (c *Cloud) SetInformers(f informers.SharedInformerFactory) {
	lb := c.lb
	lb.services = f.Core().V1().Services().Lister()
	reg, err := f.Core().V1().Services().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.observeService(obj) },
		UpdateFunc: func(_, obj any) { c.observeService(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if svc, ok := obj.(*v1.Service); ok {
				c.release(context.Background(), serviceKey(svc))
			}
		},
	})
	if err != nil {
		klog.Background().Error(err, "Cannot watch Services: LoadBalancer allocation will wait forever")
		return
	}
	lb.synced = reg.HasSynced
}

func (c *Cloud) observeService(obj any) {
	svc, ok := obj.(*v1.Service)
	if !ok {
		return
	}
	ctx := context.Background()
	if !wantsLoadBalancer(svc) {
		c.release(ctx, serviceKey(svc))
		return
	}
	lost, evicted := c.lb.alloc.Observe(owner(svc), statusIPs(svc))
	for _, ip := range lost {
		c.serviceEventf(svc, v1.EventTypeWarning, ReasonIPConflict,
			"Address %s is held by an older Service; this Service gets another one", ip)
		c.nudge(ctx, svc.Namespace, svc.Name)
	}
	for _, key := range evicted {
		ns, name, _ := cache.SplitMetaNamespaceKey(key)
		if other, err := c.lb.services.Services(ns).Get(name); err == nil {
			c.serviceEventf(other, v1.EventTypeWarning, ReasonIPConflict,
				"Address is held by the older Service %s; this Service gets another one", serviceKey(svc))
		}
		c.nudge(ctx, ns, name)
	}
}

// release frees a Service's addresses and wakes Services that wait for one.
func (c *Cloud) release(ctx context.Context, key string) {
	lb := c.lb
	freed := lb.alloc.Release(key)
	lb.mu.Lock()
	var wake []ipam.Request
	rest := lb.pending[:0]
	for _, req := range lb.pending {
		if req.Key == key {
			continue
		}
		wanted := false
		for _, ip := range freed {
			wanted = wanted || lb.alloc.Wants(req, ip)
		}
		if wanted && len(wake) < len(freed) {
			wake = append(wake, req)
			continue
		}
		rest = append(rest, req)
	}
	lb.pending = rest
	lb.mu.Unlock()
	for _, req := range wake {
		ns, name, _ := cache.SplitMetaNamespaceKey(req.Key)
		c.nudge(ctx, ns, name)
	}
}

// nudge makes the upstream service controller sync a Service now, by
// changing an annotation it watches.
func (c *Cloud) nudge(ctx context.Context, namespace, name string) {
	cs := c.client.Load()
	if cs == nil {
		return
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, AnnotationAllocationRetry, time.Now().UTC().Format(time.RFC3339Nano))
	if _, err := (*cs).CoreV1().Services(namespace).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		klog.FromContext(ctx).V(2).Info("Cannot ask for a new sync of a Service; it is retried with backoff", "service", klog.KRef(namespace, name), "err", err)
	}
}

func (c *Cloud) setPending(req ipam.Request, pending bool) {
	lb := c.lb
	lb.mu.Lock()
	defer lb.mu.Unlock()
	for i, r := range lb.pending {
		if r.Key == req.Key {
			lb.pending = append(lb.pending[:i], lb.pending[i+1:]...)
			break
		}
	}
	if pending {
		lb.pending = append(lb.pending, req)
	}
}

func (c *Cloud) setFailed(key string, failed bool) {
	lb := c.lb
	lb.mu.Lock()
	defer lb.mu.Unlock()
	if !failed {
		delete(lb.failed, key)
		return
	}
	if lb.failed == nil {
		lb.failed = map[string]bool{}
	}
	lb.failed[key] = true
}

// retryFailed asks the service controller to sync every refused Service
// again at once (after a config reload, which may have fixed them).
func (c *Cloud) retryFailed(ctx context.Context) {
	lb := c.lb
	lb.mu.Lock()
	keys := make([]string, 0, len(lb.failed))
	for k := range lb.failed {
		keys = append(keys, k)
	}
	lb.mu.Unlock()
	for _, k := range keys {
		ns, name, _ := cache.SplitMetaNamespaceKey(k)
		c.nudge(ctx, ns, name)
	}
}

// GetLoadBalancer reports the addresses a Service holds.
func (c *Cloud) GetLoadBalancer(_ context.Context, _ string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	held := c.lb.alloc.Held(serviceKey(svc))
	if len(held) == 0 {
		return nil, false, nil
	}
	return ingress(held), true, nil
}

// GetLoadBalancerName is the upstream default name.
func (c *Cloud) GetLoadBalancerName(_ context.Context, _ string, svc *v1.Service) string {
	return cloudprovider.DefaultLoadBalancerName(svc)
}

// EnsureLoadBalancer allocates the Service's addresses. It writes nothing:
// the service controller puts them in the status, and every replica's
// announcer announces what the status shows.
func (c *Cloud) EnsureLoadBalancer(ctx context.Context, _ string, svc *v1.Service, _ []*v1.Node) (*v1.LoadBalancerStatus, error) {
	if c.lb.synced == nil || !cache.WaitForCacheSync(ctx.Done(), c.lb.synced) {
		return nil, fmt.Errorf("ensure load balancer %s: Services not synced yet", serviceKey(svc))
	}
	req, err := request(svc)
	if err == nil {
		var ips []netip.Addr
		if ips, err = c.lb.alloc.Assign(req); err == nil {
			c.setPending(req, false)
			c.setFailed(req.Key, false)
			allocations.WithLabelValues("ok").Inc()
			for _, ip := range c.lb.alloc.OutsidePools(ips) {
				c.serviceEventf(svc, v1.EventTypeWarning, ReasonAddressOutsidePools,
					"Address %s is in no configured pool; the Service keeps it. Delete the Service, or name a pool with %s, to move it", ip, AnnotationPool)
			}
			klog.FromContext(ctx).V(2).Info("Allocated LoadBalancer addresses", "service", klog.KObj(svc), "addresses", ips)
			return ingress(ips), nil
		}
	}
	reason := reasonFor(err)
	allocations.WithLabelValues(reason).Inc()
	c.setFailed(serviceKey(svc), true)
	c.setPending(req, reason == ReasonPoolExhausted)
	c.serviceEventf(svc, v1.EventTypeWarning, reason, "%v", err)
	return nil, fmt.Errorf("ensure load balancer %s: %w", serviceKey(svc), err)
}

// UpdateLoadBalancer has nothing to do: announcements follow nodes by
// themselves. cloudprovider.ImplementedElsewhere (unwrapped: upstream compares
// with ==) keeps the upstream service controller from recording an
// UpdatedLoadBalancer Event for every Service on every node change.
func (c *Cloud) UpdateLoadBalancer(context.Context, string, *v1.Service, []*v1.Node) error {
	return cloudprovider.ImplementedElsewhere
}

// LoadBalancersFollowNodes reports that the announcer, not the service
// controller, follows node changes: the command then runs pkg/lbcontroller,
// which watches no nodes (cmd/metal-cloud-controller-manager/service.go).
func (c *Cloud) LoadBalancersFollowNodes() bool { return true }

// EnsureLoadBalancerDeleted frees the Service's addresses.
func (c *Cloud) EnsureLoadBalancerDeleted(ctx context.Context, _ string, svc *v1.Service) error {
	c.setFailed(serviceKey(svc), false)
	c.release(ctx, serviceKey(svc))
	return nil
}

func (c *Cloud) serviceEventf(svc *v1.Service, eventType, reason, format string, args ...any) {
	if rec := c.recorder.Load(); rec != nil {
		(*rec).Eventf(svc, eventType, reason, format, args...)
	}
}
