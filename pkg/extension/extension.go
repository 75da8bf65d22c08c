// Package extension is what a provider offers the manager
// (cmd/metal-cloud-controller-manager) beyond cloudprovider.Interface: one
// value, returned by the provider's Extensions method, instead of an
// optional interface per feature that the command would have to look for
// one by one. Every field is optional; the zero value is a plain upstream
// provider.
package extension

import (
	"context"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/metal-ccm/metal-ccm/pkg/lbrule"
)

// Provider is a provider with extensions.
type Provider interface {
	Extensions() Extensions
}

// Extensions are a provider's extensions.
type Extensions struct {
	// EveryReplica is work every replica runs whatever the leader
	// election says (the metal provider's announcements), started before
	// the election; nil: none.
	EveryReplica EveryReplica
	// WatchConfig applies a changed config file at path without a
	// restart, until ctx ends; nil: a change waits for a restart. It
	// returns an error wrapping config.ErrRestart when a change takes a restart:
	// the manager then stops cleanly, and the pod's restart policy starts
	// it again with the new config.
	WatchConfig func(ctx context.Context, path string) error
	// Services is set by a provider whose load balancers follow the nodes
	// by themselves (UpdateLoadBalancer has nothing to do): the manager
	// then runs pkg/lbcontroller instead of upstream's service controller.
	Services *Services
}

// EveryReplica is work that runs in every replica.
type EveryReplica interface {
	// RunInEveryReplica starts that work with cs, watching through
	// factory's informers (the upstream controllers' too), which it may
	// start; it returns once the work is started.
	RunInEveryReplica(ctx context.Context, cs kubernetes.Interface, factory informers.SharedInformerFactory) error
	// StopInEveryReplica ends that work before the process exits;
	// othersRun tells (taking up to a few seconds) whether another replica
	// is known to run.
	StopInEveryReplica(ctx context.Context, othersRun func() bool)
}

// Services is how pkg/lbcontroller serves the provider's load balancers.
type Services struct {
	// Rule is which Services are served (the zero Rule: upstream's, the
	// Services without a loadBalancerClass).
	Rule lbrule.Rule
	// OutputAnnotations are annotations the provider writes on Services
	// for people to read: the service controller does not sync a Service
	// for their changes.
	OutputAnnotations []string
	// SetRequeue, when set, is given the service controller's requeue, so
	// that the provider can retry a Service it refused once it may be
	// served (an address freed, a config reload). Called before the
	// controller runs.
	SetRequeue func(requeue func(key string))
	// SetBusy, when set, is given what tells whether the service
	// controller has Services to sync, so that the provider's own writes
	// wait while it has: addresses first.
	SetBusy func(busy func() bool)
}

// Of is the extensions of a provider, the zero value for one without.
func Of(cloud any) Extensions {
	if p, ok := cloud.(Provider); ok {
		return p.Extensions()
	}
	return Extensions{}
}
