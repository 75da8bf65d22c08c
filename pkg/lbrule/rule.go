// Package lbrule holds the one rule of which Services the provider serves,
// apart from the controller that ensures them (pkg/lbcontroller), so that
// the node agent, which uses the rule but runs no controller, does not link
// the controller's clients.
package lbrule

import v1 "k8s.io/api/core/v1"

// WantsLoadBalancer reports whether a Service should hold a load balancer of
// the provider now: of type LoadBalancer, without a loadBalancerClass (a
// class names another implementation, as upstream), and not being deleted.
// It is the one rule of which Services are served: the controller ensures
// exactly these, and a provider that keeps state of its own (the metal
// provider's allocator and announcer, the node agent's announcer) uses it
// too, so that they never disagree. A Service being deleted is excluded
// because what it holds is freed then: a provider must not take its status
// for an address in use.
func WantsLoadBalancer(svc *v1.Service) bool {
	return svc.Spec.Type == v1.ServiceTypeLoadBalancer && svc.Spec.LoadBalancerClass == nil && svc.DeletionTimestamp == nil
}
