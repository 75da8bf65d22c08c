package metal

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/annotation"
	"github.com/metal-ccm/metal-ccm/pkg/bgp/community"
	"github.com/metal-ccm/metal-ccm/pkg/ipam"
	"github.com/metal-ccm/metal-ccm/pkg/lbcontroller"
	"github.com/metal-ccm/metal-ccm/pkg/protocol/bgp"
)

var (
	_ cloudprovider.LoadBalancer = (*Cloud)(nil)
	_ cloudprovider.InformerUser = (*Cloud)(nil)
)

// lbState is the leader's allocation state: the allocator, fed by the
// Service informer, and the Services to retry (retry.go).
type lbState struct {
	alloc    *ipam.Allocator
	synced   cache.InformerSynced
	services corelisters.ServiceLister
	requeue  atomic.Pointer[func(key string)] // the service controller's, see SetRequeue
	busy     atomic.Pointer[func() bool]      // the service controller's, see SetBusy
	informed chan struct{}                    // closed once SetInformers has set services and synced

	mu      sync.Mutex
	pending []ipam.Request     // waiting for a free address, oldest first
	failed  map[string]refusal // refused Services, retried at once after a config reload
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
	c.nodes = f.Core().V1().Nodes().Lister()
	c.nodeInformer = f.Core().V1().Nodes().Informer()
	c.watchCSRs(f)
	reg, err := f.Core().V1().Services().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.observeService(obj) },
		UpdateFunc: func(_, obj any) { c.observeService(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if svc, ok := obj.(*v1.Service); ok {
				c.release(context.Background(), lbcontroller.Key(svc))
			}
		},
	})
	if err != nil {
		klog.Background().Error(err, "Cannot watch Services: LoadBalancer allocation will wait forever")
		return
	}
	lb.synced = reg.HasSynced
	close(lb.informed)
}

func (c *Cloud) observeService(obj any) {
	svc, ok := obj.(*v1.Service)
	if !ok {
		return
	}
	ctx := context.Background()
	c.kickStatus()
	if !c.wantsLoadBalancer(svc) {
		c.release(ctx, lbcontroller.Key(svc))
		return
	}
	lost, evicted := c.lb.alloc.Observe(owner(svc), statusIPs(svc))
	for _, ip := range lost {
		c.eventf(svc, v1.EventTypeWarning, ReasonIPConflict,
			"Address %s is held by an older Service; this Service gets another one", ip)
		c.requeue(ctx, lbcontroller.Key(svc), "lost a duplicate address")
	}
	for _, key := range evicted {
		ns, name, _ := cache.SplitMetaNamespaceKey(key)
		if other, err := c.lb.services.Services(ns).Get(name); err == nil {
			c.eventf(other, v1.EventTypeWarning, ReasonIPConflict,
				"Address is held by the older Service %s; this Service gets another one", lbcontroller.Key(svc))
		}
		c.requeue(ctx, key, "lost a duplicate address")
	}
}

// release frees a Service's addresses and wakes Services that wait for one.
func (c *Cloud) release(ctx context.Context, key string) {
	freed := c.lb.alloc.Release(key)
	for _, k := range c.wake(key, freed) {
		c.requeue(ctx, k, "an address was freed")
	}
}

// GetLoadBalancer reports the addresses a Service holds.
func (c *Cloud) GetLoadBalancer(_ context.Context, _ string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	held := c.lb.alloc.Held(lbcontroller.Key(svc))
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
	key := lbcontroller.Key(svc)
	if c.lb.synced == nil || !cache.WaitForCacheSync(ctx.Done(), c.lb.synced) {
		return nil, fmt.Errorf("ensure load balancer %s: Services not synced yet", key)
	}
	req, err := request(svc)
	if err == nil {
		var ips []netip.Addr
		if ips, err = c.lb.alloc.Assign(req); err == nil {
			c.setPending(req, false)
			c.setFailed(key, nil)
			allocations.WithLabelValues("ok").Inc()
			for _, ip := range c.lb.alloc.OutsidePools(ips) {
				c.eventf(svc, v1.EventTypeWarning, ReasonAddressOutsidePools,
					"Address %s is in no configured pool: the Service keeps it, but nothing announces it. Add a pool that holds it (autoAssign: false keeps other Services off it), or delete the Service or name a pool with %s to move it", ip, annotation.Pool.Name())
			}
			// Written into the status by someone else, and not kept: the
			// status is put back, and nothing announced it meanwhile.
			for _, ip := range c.lb.alloc.OutsidePools(statusIPs(svc)) {
				if !slices.Contains(ips, ip) {
					c.eventf(svc, v1.EventTypeWarning, ReasonAddressOutsidePools,
						"Address %s was written into the status, but it is in no configured pool: it is not announced, and the status is set back to %v", ip, ips)
				}
			}
			c.checkCommunities(svc, ips)
			klog.FromContext(ctx).V(2).Info("Allocated LoadBalancer addresses", "service", klog.KObj(svc), "addresses", ips)
			return ingress(ips), nil
		}
	}
	reason := reasonFor(err)
	allocations.WithLabelValues(reason).Inc()
	c.setFailed(key, &refusal{reason, err.Error()})
	c.setPending(req, reason == ReasonPoolExhausted)
	c.eventf(svc, v1.EventTypeWarning, reason, "%v", err)
	return nil, fmt.Errorf("ensure load balancer %s: %w", key, err)
}

// UpdateLoadBalancer has nothing to do: announcements follow nodes by
// themselves. cloudprovider.ImplementedElsewhere (unwrapped: upstream compares
// with ==) keeps the upstream service controller from recording an
// UpdatedLoadBalancer Event for every Service on every node change.
func (c *Cloud) UpdateLoadBalancer(context.Context, string, *v1.Service, []*v1.Node) error {
	return cloudprovider.ImplementedElsewhere
}

// EnsureLoadBalancerDeleted frees the Service's addresses.
func (c *Cloud) EnsureLoadBalancerDeleted(ctx context.Context, _ string, svc *v1.Service) error {
	key := lbcontroller.Key(svc)
	c.setFailed(key, nil)
	c.release(ctx, key)
	return nil
}

// checkCommunities records a Warning Event when the announcers leave out
// the Service's metal-ccm.io/bgp-communities (bgp.ServiceCommunities, the
// rule they apply): it cannot be read, or its pool does not allow them.
func (c *Cloud) checkCommunities(svc *v1.Service, ips []netip.Addr) {
	lb := &c.state.Load().cfg.LoadBalancer
	for _, ip := range ips {
		_, err := bgp.ServiceCommunities(lb, svc, ip)
		switch {
		case errors.Is(err, community.ErrInvalid):
			c.eventf(svc, v1.EventTypeWarning, ReasonInvalidAnnotation, "%v", err)
			return
		case err != nil:
			c.eventf(svc, v1.EventTypeWarning, ReasonCommunityNotAllowed, "%v", err)
		}
	}
}
