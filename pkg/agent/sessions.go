package agent

import (
	"context"
	"fmt"
	"os"

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
// (POD_NAMESPACE, POD_NAME, and POD_UID for the Lease's owner, which the
// chart sets from the Downward API). Without them, or without sessions,
// nothing is published.
func (a *Agent) publishSessions(ctx context.Context, roles []protocol.Agent) {
	var srcs []protocol.Sessions
	for _, r := range roles {
		if s, ok := r.(protocol.Sessions); ok && s.Sessions() != nil {
			srcs = append(srcs, s)
		}
	}
	if len(srcs) == 0 {
		return
	}
	ns, pod := os.Getenv("POD_NAMESPACE"), os.Getenv("POD_NAME")
	if ns == "" || pod == "" {
		klog.FromContext(ctx).V(2).Info("Not publishing the BGP sessions' state: POD_NAMESPACE or POD_NAME is not set")
		return
	}
	p := &sessions.Publisher{
		Role: sessions.RoleAgent, Pod: pod, Node: a.NodeName, Namespace: ns,
		Owner: sessions.Owner{Name: pod, UID: os.Getenv("POD_UID")},
		Peers: func() []sessions.Peer {
			var out []sessions.Peer
			for _, s := range srcs {
				out = append(out, s.Sessions()...)
			}
			return out
		},
		Apply: a.Client.Leases(ns).Apply,
	}
	go p.Run(ctx)
}
