package lbrule

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestWantsLoadBalancer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*v1.Service)
		want   bool
	}{
		{"type LoadBalancer", func(*v1.Service) {}, true},
		{"type NodePort", func(s *v1.Service) { s.Spec.Type = v1.ServiceTypeNodePort }, false},
		{"another class", func(s *v1.Service) { s.Spec.LoadBalancerClass = ptr.To("example.com/other") }, false},
		{"being deleted", func(s *v1.Service) { s.DeletionTimestamp = ptr.To(metav1.Now()) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := &v1.Service{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"},
				Spec:       v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer},
			}
			tc.change(svc)
			if got := WantsLoadBalancer(svc); got != tc.want {
				t.Errorf("WantsLoadBalancer = %v, want %v", got, tc.want)
			}
		})
	}
}
