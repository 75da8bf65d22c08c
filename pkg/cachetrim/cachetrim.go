// Package cachetrim is the informer transform of every process of the
// project (the manager's replicas and the node agents): it drops what none of
// them reads before an object is cached.
package cachetrim

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Transform drops every object's managedFields (about 30% of a decoded
// Service or Node) and a Node's status.images (the kubelet lists every
// image on the node, often the largest part of a real Node). Writes stay
// whole: upstream's controllers patch a Node with the difference of two
// cached copies (both without them), or update the Node itself, whose
// status the API server keeps; a write without managedFields keeps the
// server's.
func Transform(obj any) (any, error) {
	if m, ok := obj.(metav1.Object); ok {
		m.SetManagedFields(nil)
	}
	if n, ok := obj.(*v1.Node); ok {
		n.Status.Images = nil
	}
	return obj, nil
}
