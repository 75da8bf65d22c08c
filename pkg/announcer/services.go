package announcer

import (
	"net/netip"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/community"
	"github.com/metal-ccm/metal-ccm/pkg/rendezvous"
)

// serviceContribution computes the prefixes and next hops of a Service
// (key namespace/name): its status addresses, with the eligible nodes (for
// externalTrafficPolicy Local, those with a ready endpoint) that pass their
// health checks, capped; the communities it adds to them (only with
// Options.Communities); and, for those Options.Weighted weighs, the ready
// endpoints behind each next hop.
func (a *Announcer) serviceContribution(key string) (contribution, map[netip.Prefix]community.Set, map[netip.Prefix]hopWeights) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil, nil, nil
	}
	svc, err := a.services.Services(ns).Get(name)
	if err != nil || svc.DeletionTimestamp != nil || !a.serves(svc) {
		a.healthTargetsChanged = a.health.setLocal(key, nil, 0) || a.healthTargetsChanged
		a.outside.set(key, 0)
		return nil, nil, nil
	}
	hops4, hops6 := a.hops4, a.hops6
	var nodes map[string]nodeHops // with externalTrafficPolicy Local: the nodes with a ready endpoint
	var counts *[2]map[string]int // their endpoints, counted when first needed
	if svc.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal {
		port := localPort(svc)
		nodes = a.withReadyEndpoints(svc)
		a.healthTargetsChanged = a.health.setLocal(key, nodes, port) || a.healthTargetsChanged
		hops4, hops6 = hopLists(a.health.healthy(nodes, port))
	} else {
		a.healthTargetsChanged = a.health.setLocal(key, nil, 0) || a.healthTargetsChanged
	}
	var out contribution
	var comms map[netip.Prefix]community.Set
	var weights map[netip.Prefix]hopWeights
	left := 0
	for _, in := range svc.Status.LoadBalancer.Ingress {
		ip, err := netip.ParseAddr(in.IP)
		if err != nil {
			continue
		}
		ip = ip.Unmap()
		// The status is not trusted to bound what is announced: whoever
		// may write services/status could name any address.
		if a.opts.Addresses != nil && !a.opts.Addresses(ip) {
			if a.opts.InPools == nil || !a.opts.InPools(ip) {
				left++
			}
			continue
		}
		hops := hops6
		if ip.Is4() {
			hops = hops4
		}
		p := netip.PrefixFrom(ip, ip.BitLen())
		picked := rendezvous.Pick(p, hops, a.opts.MaxNextHops)
		out = out.with(p, picked)
		if a.weights != nil && nodes != nil && a.opts.Weighted(svc, ip) {
			if counts == nil {
				counts = new(a.endpointCounts(svc))
			}
			if w := weightsOf(picked, nodes, *counts, ip.Is4()); len(w) > 0 {
				if weights == nil {
					weights = map[netip.Prefix]hopWeights{}
				}
				weights[p] = w
			}
		}
		if a.comms != nil {
			if c := a.opts.Communities(svc, ip); !c.Empty() {
				if comms == nil {
					comms = map[netip.Prefix]community.Set{}
				}
				comms[p] = c
			}
		}
	}
	a.outside.set(key, left)
	return out, comms, weights
}

// byService indexes EndpointSlices by "namespace/service".
const byService = "metal-ccm.io/service"

func serviceOfSlice(o any) ([]string, error) {
	s, ok := o.(*discoveryv1.EndpointSlice)
	if !ok || s.Labels[discoveryv1.LabelServiceName] == "" {
		return nil, nil
	}
	return []string{cache.NewObjectName(s.Namespace, s.Labels[discoveryv1.LabelServiceName]).String()}, nil
}

// slicesOf returns the EndpointSlices of a Service.
func (a *Announcer) slicesOf(svc *v1.Service) []*discoveryv1.EndpointSlice {
	objs, err := a.slices.ByIndex(byService, cache.MetaObjectToName(svc).String())
	if err != nil {
		return nil
	}
	out := make([]*discoveryv1.EndpointSlice, 0, len(objs))
	for _, o := range objs {
		if s, ok := o.(*discoveryv1.EndpointSlice); ok {
			out = append(out, s)
		}
	}
	return out
}

// withReadyEndpoints narrows the eligible nodes to those with a ready
// endpoint of svc (externalTrafficPolicy Local): an endpoint on a node that
// does not carry traffic adds nothing.
func (a *Announcer) withReadyEndpoints(svc *v1.Service) map[string]nodeHops {
	out := map[string]nodeHops{}
	for _, s := range a.slicesOf(svc) {
		for _, ep := range s.Endpoints {
			ready := ep.Conditions.Ready == nil || *ep.Conditions.Ready
			if !ready || ep.NodeName == nil {
				continue
			}
			if h, ok := a.eligible[*ep.NodeName]; ok {
				out[*ep.NodeName] = h
			}
		}
	}
	return out
}
