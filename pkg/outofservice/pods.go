package outofservice

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/ptr"
)

// deleteTerminating force-deletes (grace period 0) the pods of node n that
// are Terminating, and returns their names (namespace/name). It is what
// Kubernetes' pod garbage collector does for an out-of-service node, but
// at once: the collector runs every 20 s and waits for the node to be
// NotReady, which on the fast path comes up to the node monitor grace
// period later. The caller has just heard Off from the node's source.
func (c *Controller) deleteTerminating(ctx context.Context, n *v1.Node) ([]string, error) {
	list, err := c.Client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("spec.nodeName", n.Name).String(),
		ResourceVersion: "0", // the API server's cache: this runs every round
	})
	if err != nil {
		return nil, fmt.Errorf("list the pods of node %s: %w", n.Name, err)
	}
	var deleted []string
	var errs []error
	for i := range list.Items {
		p := &list.Items[i]
		if p.Spec.NodeName != n.Name || p.DeletionTimestamp == nil {
			// Not being deleted: the taint's eviction decides (a pod
			// that tolerates the taint stays).
			continue
		}
		err := c.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
			GracePeriodSeconds: ptr.To[int64](0),
			// This pod, not one of the same name made since.
			Preconditions: &metav1.Preconditions{UID: &p.UID},
		})
		switch {
		case err == nil:
			deleted = append(deleted, p.Namespace+"/"+p.Name)
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
			// Gone already, or replaced.
		default:
			errs = append(errs, fmt.Errorf("%s/%s: %w", p.Namespace, p.Name, err))
		}
	}
	if len(errs) > 0 {
		return deleted, fmt.Errorf("force-delete the Terminating pods of node %s: %w", n.Name, errors.Join(errs...))
	}
	return deleted, nil
}
