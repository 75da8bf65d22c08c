package lbcontroller

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/cache"
	servicehelper "k8s.io/cloud-provider/service/helpers"

	"github.com/metal-ccm/metal-ccm/pkg/lbrule"
)

// WantsLoadBalancer reports whether a Service should hold a load balancer of
// the provider now: the rule of pkg/lbrule, which the controller ensures.
func WantsLoadBalancer(svc *v1.Service) bool { return lbrule.WantsLoadBalancer(svc) }

// Key is a Service's key in the controller's queue, "namespace/name" (the
// key of client-go's caches), and the key Requeue takes. A provider that
// remembers Services for a later Requeue keys them with it.
func Key(svc *v1.Service) string { return cache.MetaObjectToName(svc).String() }

// needsCleanup: the Service holds the finalizer and is being deleted or no
// longer of type LoadBalancer.
func needsCleanup(svc *v1.Service) bool {
	return servicehelper.HasLBFinalizer(svc) && (svc.DeletionTimestamp != nil || svc.Spec.Type != v1.ServiceTypeLoadBalancer)
}

// needsSync reports whether a change may change the load balancer: what the
// provider reads is the spec, the annotations and the status, and the
// finalizer must be put back if someone removes it. Status writes of our
// own come back here and cost one sync that writes nothing. A Service that
// is being deleted and holds the finalizer is taken by needsCleanup.
func needsSync(old, cur *v1.Service) bool {
	if !WantsLoadBalancer(old) && !WantsLoadBalancer(cur) {
		return false
	}
	return old.UID != cur.UID ||
		!equality.Semantic.DeepEqual(old.Spec, cur.Spec) ||
		!equality.Semantic.DeepEqual(old.Annotations, cur.Annotations) ||
		servicehelper.HasLBFinalizer(old) != servicehelper.HasLBFinalizer(cur) ||
		!servicehelper.LoadBalancerStatusEqual(&old.Status.LoadBalancer, &cur.Status.LoadBalancer)
}
