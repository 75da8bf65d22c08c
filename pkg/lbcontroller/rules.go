package lbcontroller

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/cache"
	servicehelper "k8s.io/cloud-provider/service/helpers"

	"github.com/metal-ccm/metal-ccm/pkg/lbrule"
)

// Key is a Service's key in the controller's queue, "namespace/name" (the
// key of client-go's caches), and the key Requeue takes. A provider that
// remembers Services for a later Requeue keys them with it.
func Key(svc *v1.Service) string { return cache.MetaObjectToName(svc).String() }

// ours reports whether the Service is this controller's to touch: of a
// class the rule owns, or seen so while holding the finalizer (a Service
// whose type changes from LoadBalancer loses its class in the same update,
// and must still be cleaned up). Another implementation may hold the same
// finalizer on the Services of its class: those are never touched.
func (c *Controller) ours(svc *v1.Service) bool {
	if c.rule.Owns(svc) {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.served[Key(svc)] == svc.UID
}

// note remembers a Service of a class the rule owns that holds the
// finalizer, for ours.
func (c *Controller) note(svc *v1.Service) {
	if c.rule.Owns(svc) && servicehelper.HasLBFinalizer(svc) {
		c.mu.Lock()
		c.served[Key(svc)] = svc.UID
		c.mu.Unlock()
	}
}

// needsCleanup: the Service is ours, holds the finalizer and is being
// deleted or no longer of type LoadBalancer.
func (c *Controller) needsCleanup(svc *v1.Service) bool {
	return servicehelper.HasLBFinalizer(svc) && (svc.DeletionTimestamp != nil || svc.Spec.Type != v1.ServiceTypeLoadBalancer) && c.ours(svc)
}

// needsSync reports whether a change may change the load balancer: what the
// provider reads is the spec, the annotations and the status, and the
// finalizer must be put back if someone removes it. Status writes of our
// own come back here and cost one sync that writes nothing. A Service that
// is being deleted and holds the finalizer is taken by needsCleanup.
func needsSync(rule lbrule.Rule, outputs map[string]bool, old, cur *v1.Service) bool {
	if !rule.Wants(old) && !rule.Wants(cur) {
		return false
	}
	return old.UID != cur.UID ||
		!equality.Semantic.DeepEqual(old.Spec, cur.Spec) ||
		!annotationsEqual(old.Annotations, cur.Annotations, outputs) ||
		servicehelper.HasLBFinalizer(old) != servicehelper.HasLBFinalizer(cur) ||
		!servicehelper.LoadBalancerStatusEqual(&old.Status.LoadBalancer, &cur.Status.LoadBalancer)
}

// annotationsEqual compares two Services' annotations but for outputs,
// those the provider writes itself for people to read: its own status
// writes must not bring the Service back for a sync.
func annotationsEqual(a, b map[string]string, outputs map[string]bool) bool {
	count := func(m map[string]string) int {
		n := 0
		for k := range m {
			if !outputs[k] {
				n++
			}
		}
		return n
	}
	if count(a) != count(b) {
		return false
	}
	for k, v := range a {
		if outputs[k] {
			continue
		}
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
