package metal

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudproviderapi "k8s.io/cloud-provider/api"
	"k8s.io/utils/ptr"

	"github.com/metal-ccm/metal-ccm/pkg/annotation"
	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/ipam"
	"github.com/metal-ccm/metal-ccm/pkg/powerstate"
)

// fuzzService builds a Service from fuzzed annotation values and spec fields.
// families is a comma-separated spec.ipFamilies; ports are protocol/number
// pairs, "TCP/80,UDP/53"; anything unparsable is kept as it comes.
func fuzzService(ips, pool, sharingKey, lbIP, families, policy, etp, ports string) *v1.Service {
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc", Annotations: map[string]string{}},
		Spec: v1.ServiceSpec{
			Type:                  v1.ServiceTypeLoadBalancer,
			LoadBalancerIP:        lbIP,
			ExternalTrafficPolicy: v1.ServiceExternalTrafficPolicy(etp),
			Selector:              map[string]string{"app": sharingKey},
		},
	}
	for k, v := range map[annotation.Key]string{annotation.NameLoadBalancerIPs: ips, annotation.NamePool: pool, annotation.NameSharingKey: sharingKey} {
		if v != "" {
			svc.Annotations[string(k)] = v
		}
	}
	if families != "" {
		for _, f := range strings.Split(families, ",") {
			svc.Spec.IPFamilies = append(svc.Spec.IPFamilies, v1.IPFamily(f))
		}
	}
	if policy != "" {
		svc.Spec.IPFamilyPolicy = ptr.To(v1.IPFamilyPolicy(policy))
	}
	if ports != "" {
		for _, p := range strings.Split(ports, ",") {
			proto, num, _ := strings.Cut(p, "/")
			n := int32(0)
			for _, c := range num {
				n = n*10 + c - '0'
			}
			svc.Spec.Ports = append(svc.Spec.Ports, v1.ServicePort{Protocol: v1.Protocol(proto), Port: n})
		}
	}
	return svc
}

// FuzzServiceRequest reads a Service built from fuzzed annotations and spec
// fields with every parser of the provider: owner, requestedIPs and request.
// None may panic; a refusal wraps annotation.ErrInvalid and becomes the
// InvalidAnnotation Event; an accepted request asks for at most one address
// per family, each of a family the Service has, unmapped and without a zone,
// and reading the requested addresses back gives them again.
// Seeds: testdata/fuzz/FuzzServiceRequest.
func FuzzServiceRequest(f *testing.F) {
	f.Fuzz(func(t *testing.T, ips, pool, sharingKey, lbIP, families, policy, etp, ports string) {
		svc := fuzzService(ips, pool, sharingKey, lbIP, families, policy, etp, ports)
		o := owner(svc)
		if o.Key != "ns/svc" || o.SharingKey != sharingKey || len(o.Ports) != len(svc.Spec.Ports) {
			t.Fatalf("owner(%+v) = %+v", svc, o)
		}
		requested, rerr := requestedIPs(svc)
		req, err := request(svc)
		if rerr != nil && err == nil {
			t.Fatalf("requestedIPs refused (%v), request accepted", rerr)
		}
		if err != nil {
			if !errors.Is(err, annotation.ErrInvalid) {
				t.Fatalf("request refused without annotation.ErrInvalid: %v", err)
			}
			if got := reasonFor(err); got != ReasonInvalidAnnotation {
				t.Fatalf("reasonFor(%v) = %s", err, got)
			}
			return
		}
		if len(req.Families) == 0 || req.Pool != pool || req.Key != o.Key {
			t.Fatalf("request(%+v) = %+v", svc, req)
		}
		if !slices.Equal(req.Requested, requested) {
			t.Fatalf("request asks for %v, requestedIPs read %v", req.Requested, requested)
		}
		seen := map[ipam.Family]bool{}
		for _, ip := range req.Requested {
			f := ipam.FamilyOf(ip)
			if seen[f] || !slices.Contains(req.Families, f) || ip.Zone() != "" || ip.Is4In6() {
				t.Fatalf("request(%+v) asks for %v with families %v", svc, req.Requested, req.Families)
			}
			seen[f] = true
		}
		if len(requested) > 0 {
			strs := make([]string, 0, len(requested))
			for _, ip := range requested {
				strs = append(strs, ip.String())
			}
			back := fuzzService(strings.Join(strs, ","), "", "", "", "", "", "", "")
			again, err := requestedIPs(back)
			if err != nil || !slices.Equal(again, requested) {
				t.Fatalf("requested %v, written back and read again: %v, %v", requested, again, err)
			}
		}
	})
}

// FuzzNodeAddresses reads a node's provided-node-ip annotation and
// providerID: no panic; every address read is an IP; the hostname comes last;
// a providerID that parses prints back to itself.
// Seeds: testdata/fuzz/FuzzNodeAddresses.
func FuzzNodeAddresses(f *testing.F) {
	f.Fuzz(func(t *testing.T, provided, statusIP, providerIDText string) {
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a",
			Annotations: map[string]string{cloudproviderapi.AnnotationAlphaProvidedIPAddr: provided}}}
		if statusIP != "" {
			node.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: statusIP}}
		}
		addrs := providedAddresses(node)
		for i, a := range addrs {
			if i == len(addrs)-1 {
				if a.Type != v1.NodeHostName || a.Address != node.Name {
					t.Fatalf("providedAddresses(%q) = %v: no hostname last", provided, addrs)
				}
				continue
			}
			if a.Type != v1.NodeInternalIP {
				t.Fatalf("providedAddresses(%q) = %v", provided, addrs)
			}
			if _, err := netip.ParseAddr(a.Address); err != nil && a.Address != statusIP {
				t.Fatalf("providedAddresses(%q) = %v: %q is not an IP", provided, addrs, a.Address)
			}
		}
		pid, err := parseProviderID(providerIDText)
		if err != nil {
			if !errors.Is(err, ErrForeignProviderID) {
				t.Fatalf("parseProviderID(%q): %v", providerIDText, err)
			}
			return
		}
		if pid.String() != providerIDText {
			t.Fatalf("parseProviderID(%q) prints back as %q", providerIDText, pid.String())
		}
	})
}

// FuzzNewState builds the provider's state from every config that
// config.Parse accepts: validation must refuse whatever the provider cannot
// build. Seeds: testdata/fuzz/FuzzNewState.
func FuzzNewState(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			t.Skip("larger than a config")
		}
		cfg, err := config.Parse(data)
		if err != nil {
			return
		}
		if _, err := newState(cfg, powerstate.Env{}); err != nil {
			t.Fatalf("config.Parse accepted a config the provider cannot build: %v\n%s", err, data)
		}
	})
}
