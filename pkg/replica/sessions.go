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
// (sessions.ForPod). Outside a pod, or without sessions, nothing is
// published.
func publishSessions(ctx context.Context, cs kubernetes.Interface, all []protocol.Replica) {
	peers := protocol.SessionsOf(all)
	if peers == nil {
		return
	}
	p, ok := sessions.ForPod(sessions.RoleReplica, os.Getenv("NODE_NAME"), peers, func(ns string) sessions.Apply {
		leases := cs.CoordinationV1().Leases(ns)
		return func(ctx context.Context, name string, body []byte) error {
			_, err := leases.Patch(ctx, name, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: fieldManager, Force: ptr.To(true)})
			return err
		}
	})
	if !ok {
		klog.FromContext(ctx).V(2).Info("Not publishing the BGP sessions' state: POD_NAMESPACE or POD_NAME is not set")
		return
	}
	go p.Run(ctx)
}
