// Package lbrule holds the one rule of which Services the provider serves,
// apart from the controller that ensures them (pkg/lbcontroller), so that
// the node agent, which uses the rule but runs no controller, does not link
// the controller's clients.
package lbrule

import v1 "k8s.io/api/core/v1"

// Rule is the one rule of which Services are served: the service controller
// ensures exactly the Services it wants, and a provider that keeps state of
// its own (the metal provider's allocator and announcer, the node agent's
// announcer) uses the same Rule, built once from the config, so that they
// never disagree. The zero Rule serves the Services without a
// loadBalancerClass, as upstream's service controller does.
type Rule struct {
	// Class is the spec.loadBalancerClass served; "" serves the Services
	// without a class alone.
	Class string
	// ServeDefault, with a Class, also serves the Services without a class.
	ServeDefault bool
}

// Owns reports whether the Service's class is served, whatever its type
// and whether it is being deleted: a Service of a class not served belongs
// to another implementation, which may hold the same cleanup finalizer, so
// that nothing of it may be touched, not even to clean up.
func (r Rule) Owns(svc *v1.Service) bool {
	if svc.Spec.LoadBalancerClass == nil {
		return r.Class == "" || r.ServeDefault
	}
	return r.Class != "" && *svc.Spec.LoadBalancerClass == r.Class
}

// Wants reports whether a Service should hold a load balancer of the
// provider now: of type LoadBalancer, of a class it owns, and not being
// deleted. A Service being deleted is excluded because what it holds is
// freed then: a provider must not take its status for an address in use.
func (r Rule) Wants(svc *v1.Service) bool {
	return svc.Spec.Type == v1.ServiceTypeLoadBalancer && r.Owns(svc) && svc.DeletionTimestamp == nil
}
