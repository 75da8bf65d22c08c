package framework

import (
	"context"
	"fmt"
	"net/netip"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// ServeKubernetesService points the kubernetes Service (default namespace)
// at the API relay of node n (APIPort on its first node IP), so that pods
// using in-cluster configuration reach the API server through kube-proxy as
// on a real cluster. The API server itself writes no endpoints here
// (--endpoint-reconciler-type none: it listens on the host's loopback); its
// certificate holds the Service's cluster IP, so TLS verification holds.
func (cp *ControlPlane) ServeKubernetesService(ctx context.Context, n *RealNode) error {
	cs, err := cp.Client()
	if err != nil {
		return err
	}
	addr, err := netip.ParseAddr(n.NodeIPs[0])
	if err != nil {
		return fmt.Errorf("kubernetes service: node %s: %w", n.Name, err)
	}
	family := discoveryv1.AddressTypeIPv4
	if addr.Is6() {
		family = discoveryv1.AddressTypeIPv6
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: metav1.NamespaceDefault, Labels: map[string]string{
			discoveryv1.LabelServiceName: "kubernetes",
			discoveryv1.LabelManagedBy:   "metal-ccm-test-framework",
		}},
		AddressType: family,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{addr.String()},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
		}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To[int32](APIPort), Protocol: ptr.To(v1.ProtocolTCP)}},
	}
	_, err = cs.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault).Create(ctx, slice, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		var old *discoveryv1.EndpointSlice
		if old, err = cs.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault).Get(ctx, "kubernetes", metav1.GetOptions{}); err == nil {
			slice.ResourceVersion = old.ResourceVersion
			_, err = cs.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault).Update(ctx, slice, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("kubernetes service endpoints: %w", err)
	}
	return nil
}
