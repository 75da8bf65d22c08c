package lbrule

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestRule(t *testing.T) {
	const ours, other = "metal-ccm.io/bgp", "example.com/other"
	classless := Rule{}
	classed := Rule{Class: ours}
	withDefault := Rule{Class: ours, ServeDefault: true}
	for _, tc := range []struct {
		name       string
		rule       Rule
		change     func(*v1.Service)
		owns, want bool
	}{
		{"class-less rule, type LoadBalancer", classless, func(*v1.Service) {}, true, true},
		{"class-less rule, type NodePort", classless, func(s *v1.Service) { s.Spec.Type = v1.ServiceTypeNodePort }, true, false},
		{"class-less rule, a class", classless, func(s *v1.Service) { s.Spec.LoadBalancerClass = ptr.To(other) }, false, false},
		{"class-less rule, being deleted", classless, func(s *v1.Service) { s.DeletionTimestamp = ptr.To(metav1.Now()) }, true, false},
		{"our class", classed, func(s *v1.Service) { s.Spec.LoadBalancerClass = ptr.To(ours) }, true, true},
		{"our class, being deleted", classed, func(s *v1.Service) {
			s.Spec.LoadBalancerClass = ptr.To(ours)
			s.DeletionTimestamp = ptr.To(metav1.Now())
		}, true, false},
		{"another class", classed, func(s *v1.Service) { s.Spec.LoadBalancerClass = ptr.To(other) }, false, false},
		{"another class, being deleted", classed, func(s *v1.Service) {
			s.Spec.LoadBalancerClass = ptr.To(other)
			s.DeletionTimestamp = ptr.To(metav1.Now())
		}, false, false},
		{"no class, without serveDefault", classed, func(*v1.Service) {}, false, false},
		{"no class, with serveDefault", withDefault, func(*v1.Service) {}, true, true},
		{"no class, with serveDefault, type ClusterIP", withDefault, func(s *v1.Service) { s.Spec.Type = v1.ServiceTypeClusterIP }, true, false},
		{"another class, with serveDefault", withDefault, func(s *v1.Service) { s.Spec.LoadBalancerClass = ptr.To(other) }, false, false},
		{"our class, with serveDefault", withDefault, func(s *v1.Service) { s.Spec.LoadBalancerClass = ptr.To(ours) }, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := &v1.Service{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"},
				Spec:       v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer},
			}
			tc.change(svc)
			if got := tc.rule.Owns(svc); got != tc.owns {
				t.Errorf("Owns = %v, want %v", got, tc.owns)
			}
			if got := tc.rule.Wants(svc); got != tc.want {
				t.Errorf("Wants = %v, want %v", got, tc.want)
			}
		})
	}
}
