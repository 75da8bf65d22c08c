package metal

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/metal-ccm/metal-ccm/pkg/ipam"
)

// ErrInvalidAnnotation marks a Service annotation or field that cannot be read.
var ErrInvalidAnnotation = errors.New("invalid annotation")

// wantsLoadBalancer reports whether this provider serves the Service: type
// LoadBalancer, no loadBalancerClass (others' classes are left alone), not
// being deleted.
func wantsLoadBalancer(svc *v1.Service) bool {
	return svc.Spec.Type == v1.ServiceTypeLoadBalancer && svc.Spec.LoadBalancerClass == nil && svc.DeletionTimestamp == nil
}

func serviceKey(svc *v1.Service) string { return svc.Namespace + "/" + svc.Name }

// owner describes a Service to the allocator.
func owner(svc *v1.Service) ipam.Owner {
	o := ipam.Owner{
		Key:        serviceKey(svc),
		SharingKey: svc.Annotations[string(AnnotationSharingKey)],
		Compat:     string(svc.Spec.ExternalTrafficPolicy),
		Created:    svc.CreationTimestamp.Time,
	}
	if svc.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal {
		o.Compat += ":" + labels.SelectorFromSet(svc.Spec.Selector).String()
	}
	for _, p := range svc.Spec.Ports {
		o.Ports = append(o.Ports, ipam.Port{Protocol: string(p.Protocol), Port: p.Port})
	}
	return o
}

// statusIPs are the addresses in a Service's status.
func statusIPs(svc *v1.Service) []netip.Addr {
	var out []netip.Addr
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if ip, err := netip.ParseAddr(in.IP); err == nil {
			out = append(out, ip.Unmap())
		}
	}
	return out
}

// request reads what a Service asks for.
func request(svc *v1.Service) (ipam.Request, error) {
	req := ipam.Request{
		Owner:      owner(svc),
		Namespace:  svc.Namespace,
		Labels:     svc.Labels,
		Pool:       svc.Annotations[string(AnnotationPool)],
		BestEffort: svc.Spec.IPFamilyPolicy != nil && *svc.Spec.IPFamilyPolicy == v1.IPFamilyPolicyPreferDualStack,
	}
	for _, f := range svc.Spec.IPFamilies {
		if f == v1.IPv6Protocol {
			req.Families = append(req.Families, ipam.IPv6)
		} else {
			req.Families = append(req.Families, ipam.IPv4)
		}
	}
	if len(req.Families) == 0 {
		req.Families = []ipam.Family{ipam.IPv4}
	}
	requested, err := requestedIPs(svc)
	if err != nil {
		return ipam.Request{}, err
	}
	for _, ip := range requested {
		found := false
		for _, f := range req.Families {
			found = found || f == ipam.FamilyOf(ip)
		}
		if !found {
			return ipam.Request{}, fmt.Errorf("requested address %s: its family is not in spec.ipFamilies %v: %w", ip, svc.Spec.IPFamilies, ErrInvalidAnnotation)
		}
	}
	req.Requested = requested
	return req, nil
}

func requestedIPs(svc *v1.Service) ([]netip.Addr, error) {
	raw, source := svc.Annotations[string(AnnotationLoadBalancerIPs)], string(AnnotationLoadBalancerIPs)
	if raw == "" {
		raw, source = svc.Spec.LoadBalancerIP, "spec.loadBalancerIP" // still honoured, deprecated upstream
	}
	if strings.TrimSpace(raw) == "" {
		return nil, nil
	}
	var out []netip.Addr
	seen := map[ipam.Family]bool{}
	for _, s := range strings.Split(raw, ",") {
		ip, err := netip.ParseAddr(strings.TrimSpace(s))
		if err != nil || ip.Zone() != "" {
			return nil, fmt.Errorf("%s: %q is not an IP address: %w", source, strings.TrimSpace(s), ErrInvalidAnnotation)
		}
		ip = ip.Unmap()
		if seen[ipam.FamilyOf(ip)] {
			return nil, fmt.Errorf("%s: more than one %s address: %w", source, ipam.FamilyOf(ip), ErrInvalidAnnotation)
		}
		seen[ipam.FamilyOf(ip)] = true
		out = append(out, ip)
	}
	return out, nil
}

// reasonFor maps an allocation error to a stable Event reason.
func reasonFor(err error) string {
	for _, m := range []struct {
		err    error
		reason string
	}{
		{ErrInvalidAnnotation, ReasonInvalidAnnotation},
		{ipam.ErrNotInPool, ReasonIPNotInPool},
		{ipam.ErrInUse, ReasonIPInUse},
		{ipam.ErrSharingClash, ReasonSharingClash},
		{ipam.ErrUnknownPool, ReasonUnknownPool},
		{ipam.ErrPoolNotAllowed, ReasonPoolNotAllowed},
		{ipam.ErrNoPoolForFamily, ReasonNoPoolForFamily},
		{ipam.ErrPoolExhausted, ReasonPoolExhausted},
	} {
		if errors.Is(err, m.err) {
			return m.reason
		}
	}
	return ReasonAllocationFailed
}

// ingress turns addresses into a LoadBalancer status.
func ingress(ips []netip.Addr) *v1.LoadBalancerStatus {
	st := &v1.LoadBalancerStatus{}
	vip := v1.LoadBalancerIPModeVIP
	for _, ip := range ips {
		st.Ingress = append(st.Ingress, v1.LoadBalancerIngress{IP: ip.String(), IPMode: &vip})
	}
	return st
}
