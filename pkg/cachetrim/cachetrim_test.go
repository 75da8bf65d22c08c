package cachetrim

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTransform(t *testing.T) {
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}}
	out, err := Transform(svc)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.(*v1.Service); got.ManagedFields != nil || got.Name != "s" {
		t.Errorf("after the transform: %+v", got.ObjectMeta)
	}
	if _, err := Transform("not an object"); err != nil {
		t.Errorf("a non-object: %v", err)
	}
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: v1.NodeStatus{
		Images:    []v1.ContainerImage{{Names: []string{"registry.example/app:1"}, SizeBytes: 1}},
		Addresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "198.18.0.1"}},
	}}
	out, _ = Transform(node)
	if got := out.(*v1.Node); got.Status.Images != nil || len(got.Status.Addresses) != 1 {
		t.Errorf("node after the transform: %+v", got.Status)
	}
}
