package replica

import (
	"context"
	"os"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/metal-ccm/metal-ccm/pkg/protocol"
	"github.com/metal-ccm/metal-ccm/pkg/sessions"
)

// fieldManager is the replicas' server-side apply field manager.
const fieldManager = "metal-cloud-controller-manager"

// publishSessions publishes the sessions of the roles that hold some
// (pkg/sessions) in a Lease of the replica's own, named after its Pod
// (POD_NAMESPACE, POD_NAME, and POD_UID for the Lease's owner, which the
// chart sets from the Downward API). Without them, or without sessions,
// nothing is published.
func publishSessions(ctx context.Context, cs kubernetes.Interface, all []protocol.Replica) {
	var srcs []protocol.Sessions
	for _, r := range all {
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
	leases := cs.CoordinationV1().Leases(ns)
	p := &sessions.Publisher{
		Role: sessions.RoleReplica, Pod: pod, Node: os.Getenv("NODE_NAME"), Namespace: ns,
		Owner: sessions.Owner{Name: pod, UID: os.Getenv("POD_UID")},
		Peers: func() []sessions.Peer {
			var out []sessions.Peer
			for _, s := range srcs {
				out = append(out, s.Sessions()...)
			}
			return out
		},
		Apply: func(ctx context.Context, name string, body []byte) error {
			_, err := leases.Patch(ctx, name, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: fieldManager, Force: ptr.To(true)})
			return err
		},
	}
	go p.Run(ctx)
}
