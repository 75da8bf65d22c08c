package metal

import (
	"context"
	"net/netip"

	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/ipam"
)

// SetRequeue gives the provider the service controller's requeue
// (lbcontroller.Controller.Requeue), which syncs the Service with a key
// (lbcontroller.Key) now rather than after its back-off. The provider calls
// it when a refused Service may now be served: an address it waits for was
// freed, the config was reloaded, or it lost an address an older Service
// holds. The command wires it when it starts the controller
// (cmd/metal-cloud-controller-manager/service.go). Until then, or without a
// controller that offers it, such Services wait for the back-off.
func (c *Cloud) SetRequeue(requeue func(key string)) {
	if requeue == nil {
		c.lb.requeue.Store(nil)
		return
	}
	c.lb.requeue.Store(&requeue)
}

// SetBusy takes what tells whether the service controller has Services to
// sync: the Service status writer waits while it has (addresses first).
func (c *Cloud) SetBusy(busy func() bool) {
	if busy != nil {
		c.lb.busy.Store(&busy)
	}
}

// serviceControllerBusy reports whether the service controller has
// Services to sync.
func (c *Cloud) serviceControllerBusy() bool {
	b := c.lb.busy.Load()
	return b != nil && (*b)()
}

// requeue asks the service controller to sync a Service again now; why is
// for the log.
func (c *Cloud) requeue(ctx context.Context, key, why string) {
	r := c.lb.requeue.Load()
	if r == nil {
		klog.FromContext(ctx).V(4).Info("No service controller to requeue a Service; it waits for its back-off", "service", key, "why", why)
		return
	}
	klog.FromContext(ctx).V(4).Info("Requeueing a Service", "service", key, "why", why)
	(*r)(key)
}

// setPending marks a Service as waiting for a free address, or no longer.
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

// refusal is why a Service's last sync was refused: its Event reason and
// message (the Service's AddressAllocated condition shows them).
type refusal struct{ reason, message string }

// setFailed marks a Service as refused (r), or no longer (nil).
func (c *Cloud) setFailed(key string, r *refusal) {
	defer c.kickStatus()
	lb := c.lb
	lb.mu.Lock()
	defer lb.mu.Unlock()
	if r == nil {
		delete(lb.failed, key)
		return
	}
	if lb.failed == nil {
		lb.failed = map[string]refusal{}
	}
	lb.failed[key] = *r
}

// refusalOf is why the Service's last sync was refused, if it was.
func (c *Cloud) refusalOf(key string) (refusal, bool) {
	lb := c.lb
	lb.mu.Lock()
	defer lb.mu.Unlock()
	r, ok := lb.failed[key]
	return r, ok
}

// wake forgets the waiting Service gone (released) and returns the keys of
// the oldest waiting Services that one of the freed addresses could serve,
// at most one per address; they are no longer waiting.
func (c *Cloud) wake(gone string, freed []netip.Addr) []string {
	lb := c.lb
	lb.mu.Lock()
	defer lb.mu.Unlock()
	var wake []string
	rest := lb.pending[:0]
	for _, req := range lb.pending {
		if req.Key == gone {
			continue
		}
		wanted := false
		for _, ip := range freed {
			wanted = wanted || lb.alloc.Wants(req, ip)
		}
		if wanted && len(wake) < len(freed) {
			wake = append(wake, req.Key)
			continue
		}
		rest = append(rest, req)
	}
	lb.pending = rest
	return wake
}

// retryFailed requeues every refused Service (after a config reload, which
// may have fixed them).
func (c *Cloud) retryFailed(ctx context.Context) {
	lb := c.lb
	lb.mu.Lock()
	keys := make([]string, 0, len(lb.failed))
	for k := range lb.failed {
		keys = append(keys, k)
	}
	lb.mu.Unlock()
	for _, k := range keys {
		c.requeue(ctx, k, "the config was reloaded")
	}
}
