package agent

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/protocol"
	"github.com/metal-ccm/metal-ccm/pkg/sessions"
)

// fieldManager is the node agents' server-side apply field manager.
const fieldManager = "metal-node-agent"

// Apply writes the Lease name by server-side apply (body: an apply
// configuration as JSON), creating it if it is missing.
func (l Leases) Apply(ctx context.Context, name string, body []byte) error {
	err := l.client.Patch(types.ApplyPatchType).Namespace(l.namespace).Resource("leases").Name(name).
		Param("fieldManager", fieldManager).Param("force", "true").Body(body).Do(ctx).Error()
	if err != nil {
		return fmt.Errorf("apply lease %s/%s: %w", l.namespace, name, err)
	}
	return nil
}

// publishSessions publishes the sessions of the roles that hold some
// (pkg/sessions) in a Lease of the agent's own, named after its Pod
// (sessions.ForPod). Outside a pod, or without sessions, nothing is
// published.
func (a *Agent) publishSessions(ctx context.Context, roles []protocol.Agent) {
	peers := protocol.SessionsOf(roles)
	if peers == nil {
		return
	}
	p, ok := sessions.ForPod(sessions.RoleAgent, a.NodeName, peers, func(ns string) sessions.Apply { return a.Client.Leases(ns).Apply })
	if !ok {
		klog.FromContext(ctx).V(2).Info("Not publishing the BGP sessions' state: POD_NAMESPACE or POD_NAME is not set")
		return
	}
	go p.Run(ctx)
}
