package framework

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// ServiceOption changes a Service that LoadBalancerService builds.
type ServiceOption func(*v1.Service)

// LoadBalancerService is a Service of type LoadBalancer in ns, selecting
// app=name, with one port "http" (TCP 80), changed by opts in order.
func LoadBalancerService(ns, name string, opts ...ServiceOption) *v1.Service {
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1.ServiceSpec{
			Type:     v1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": name},
			Ports:    []v1.ServicePort{{Name: "http", Protocol: v1.ProtocolTCP, Port: 80}},
		},
	}
	for _, o := range opts {
		o(svc)
	}
	return svc
}

// DualStack requires both families, IPv4 first.
func DualStack(s *v1.Service) {
	s.Spec.IPFamilyPolicy = ptr.To(v1.IPFamilyPolicyRequireDualStack)
	s.Spec.IPFamilies = []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol}
}

// IPv6Only asks for IPv6 alone.
func IPv6Only(s *v1.Service) {
	s.Spec.IPFamilyPolicy = ptr.To(v1.IPFamilyPolicySingleStack)
	s.Spec.IPFamilies = []v1.IPFamily{v1.IPv6Protocol}
}

// Local sets externalTrafficPolicy Local.
func Local(s *v1.Service) { s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal }

// WithoutNodePorts sets allocateLoadBalancerNodePorts false: thousands of
// Services would exhaust the NodePort range (2,768 ports), and an address
// announced over BGP needs none.
func WithoutNodePorts(s *v1.Service) { s.Spec.AllocateLoadBalancerNodePorts = ptr.To(false) }

// WithAnnotation sets annotation k to v.
func WithAnnotation(k, v string) ServiceOption {
	return func(s *v1.Service) {
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[k] = v
	}
}

// WithPort makes the one port proto/port, named after the protocol.
func WithPort(proto v1.Protocol, port int32) ServiceOption {
	return func(s *v1.Service) {
		s.Spec.Ports = []v1.ServicePort{{Name: strings.ToLower(string(proto)), Protocol: proto, Port: port}}
	}
}

// WithLoadBalancerIP sets spec.loadBalancerIP (deprecated upstream, still
// read).
func WithLoadBalancerIP(ip string) ServiceOption {
	return func(s *v1.Service) { s.Spec.LoadBalancerIP = ip }
}

// CreateLoadBalancer creates LoadBalancerService(ns, name, opts...), failing
// the test on error, and returns what the API server stored.
func CreateLoadBalancer(t testing.TB, cs kubernetes.Interface, ns, name string, opts ...ServiceOption) *v1.Service {
	t.Helper()
	created, err := cs.CoreV1().Services(ns).Create(context.Background(), LoadBalancerService(ns, name, opts...), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create service %s/%s: %v", ns, name, err)
	}
	return created
}

// IngressIPs are the addresses in a Service's load-balancer status, in order.
func IngressIPs(s *v1.Service) []string {
	var out []string
	for _, in := range s.Status.LoadBalancer.Ingress {
		out = append(out, in.IP)
	}
	return out
}

// WaitIngressIPs waits until the Service's status has n addresses and
// returns them; it fails the test after timeout.
func WaitIngressIPs(t testing.TB, cs kubernetes.Interface, ns, name string, n int, timeout time.Duration) []string {
	t.Helper()
	var ips []string
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		s, err := cs.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // keep polling
		}
		ips = IngressIPs(s)
		return len(ips) == n, nil
	})
	if err != nil {
		t.Fatalf("service %s/%s: want %d addresses within %s, have %v", ns, name, n, timeout, ips)
	}
	return ips
}

// Endpoint is a ready endpoint of a Service: a pod address on a node.
type Endpoint struct {
	Address, Node string
}

// EndpointSlice is the IPv4 EndpointSlice "svc-owner" of Service svc in ns,
// managed by owner.metal-ccm.io, with port "http" (TCP 80) and the given
// ready endpoints: what the EndpointSlice controller writes for ready pods
// on those nodes.
func EndpointSlice(ns, svc, owner string, eps ...Endpoint) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: svc + "-" + owner,
			Labels: map[string]string{discoveryv1.LabelServiceName: svc, discoveryv1.LabelManagedBy: owner + ".metal-ccm.io"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](80), Protocol: ptr.To(v1.ProtocolTCP)}},
	}
	for _, e := range eps {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{e.Address},
			NodeName:   ptr.To(e.Node),
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
		})
	}
	return s
}
