package metal

import (
	"errors"
	"fmt"
	"net/netip"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/metal-ccm/metal-ccm/pkg/annotation"
	"github.com/metal-ccm/metal-ccm/pkg/ipam"
	"github.com/metal-ccm/metal-ccm/pkg/lbcontroller"
	"github.com/metal-ccm/metal-ccm/pkg/lbrule"
)

// ServiceRule is the rule of which Services this provider serves
// (loadBalancer.class and serveDefaultClass, read at start), for the
// service controller: the allocator and the announcer serve exactly the
// Services the controller ensures, and free what a Service being deleted
// held.
func (c *Cloud) ServiceRule() lbrule.Rule { return c.rule }

// wantsLoadBalancer reports whether this provider serves the Service now.
func (c *Cloud) wantsLoadBalancer(svc *v1.Service) bool { return c.rule.Wants(svc) }

// owner describes a Service to the allocator.
func owner(svc *v1.Service) ipam.Owner {
	sharingKey, _, _ := annotation.SharingKey.Parse(svc) // any text is a key
	o := ipam.Owner{
		// The service controller's key: Services waiting in the allocator
		// are requeued by it.
		Key:        lbcontroller.Key(svc),
		SharingKey: sharingKey,
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
	pool, _, _ := annotation.Pool.Parse(svc) // any text: an unknown pool is UnknownPool
	req := ipam.Request{
		Owner:      owner(svc),
		Namespace:  svc.Namespace,
		Labels:     svc.Labels,
		Pool:       pool,
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
			return ipam.Request{}, fmt.Errorf("requested address %s: its family is not in spec.ipFamilies %v: %w", ip, svc.Spec.IPFamilies, annotation.ErrInvalid)
		}
	}
	req.Requested = requested
	return req, nil
}

// requestedIPs are the addresses a Service asks for: the annotation's, else
// spec.loadBalancerIP's (deprecated upstream, still honoured), which reads
// as the annotation does.
func requestedIPs(svc *v1.Service) ([]netip.Addr, error) {
	ips, ok, err := annotation.LoadBalancerIPs.Parse(svc)
	if ok || err != nil {
		return ips, err
	}
	ips, err = annotation.ParseIPsPerFamily(svc.Spec.LoadBalancerIP)
	if err != nil {
		return nil, annotation.Invalid("spec.loadBalancerIP", err)
	}
	return ips, nil
}

// reasonFor maps an allocation error to a stable Event reason.
func reasonFor(err error) string {
	for _, m := range []struct {
		err    error
		reason string
	}{
		{annotation.ErrInvalid, ReasonInvalidAnnotation},
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

// ingress turns addresses into a LoadBalancerStatus.
func ingress(ips []netip.Addr) *v1.LoadBalancerStatus {
	st := &v1.LoadBalancerStatus{}
	vip := v1.LoadBalancerIPModeVIP
	for _, ip := range ips {
		st.Ingress = append(st.Ingress, v1.LoadBalancerIngress{IP: ip.String(), IPMode: &vip})
	}
	return st
}
