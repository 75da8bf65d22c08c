package config

import (
	"fmt"
	"net/netip"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/limits"
	"github.com/metal-ccm/metal-ccm/pkg/ipam"
)

func (lb *LoadBalancer) validate(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	type placed struct {
		r    ipam.Range
		path *field.Path
		text string
	}
	var all []placed
	names := map[string]int{}
	for i := range lb.Pools {
		pool := &lb.Pools[i]
		pp := p.Child("pools").Index(i)
		if pool.Name == "" {
			errs = append(errs, field.Required(pp.Child("name"), "a name for the metal-ccm.io/pool annotation"))
		} else {
			for _, msg := range validation.IsDNS1123Label(pool.Name) {
				errs = append(errs, field.Invalid(pp.Child("name"), pool.Name, msg))
			}
			if j, dup := names[pool.Name]; dup {
				errs = append(errs, field.Duplicate(pp.Child("name"), fmt.Sprintf("%s (also pools[%d])", pool.Name, j)))
			} else {
				names[pool.Name] = i
			}
		}
		if len(pool.Addresses) == 0 {
			errs = append(errs, field.Required(pp.Child("addresses"), "CIDRs or ranges"))
		}
		pool.ranges, pool.selector = nil, nil
		for j, a := range pool.Addresses {
			ap := pp.Child("addresses").Index(j)
			r, err := ipam.ParseRange(a)
			if err != nil {
				errs = append(errs, field.Invalid(ap, a, err.Error()))
				continue
			}
			pool.ranges = append(pool.ranges, r)
			for _, other := range all {
				if other.r.Overlaps(r) {
					errs = append(errs, field.Invalid(ap, a, fmt.Sprintf("overlaps %s %s", other.path, other.text)))
				}
			}
			all = append(all, placed{r, ap, a})
		}
		for j, ns := range pool.Namespaces {
			for _, msg := range validation.IsDNS1123Label(ns) {
				errs = append(errs, field.Invalid(pp.Child("namespaces").Index(j), ns, msg))
			}
		}
		if pool.ServiceSelector != nil {
			sel, err := metav1.LabelSelectorAsSelector(pool.ServiceSelector)
			if err != nil {
				errs = append(errs, field.Invalid(pp.Child("serviceSelector"), pool.ServiceSelector, err.Error()))
			}
			pool.selector = sel
		}
		errs = append(errs, pool.validateAnnounce(pp.Child("announce"))...)
	}
	return append(errs, lb.validateClass(p)...)
}

// validateClass checks class as the API server checks a Service's
// spec.loadBalancerClass, so that every class the config names is one a
// Service can have.
func (lb *LoadBalancer) validateClass(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if lb.Class != "" {
		for _, msg := range validation.IsQualifiedName(lb.Class) {
			errs = append(errs, field.Invalid(p.Child("class"), lb.Class, msg))
		}
	}
	if lb.ServeDefaultClass && lb.Class == "" {
		// Refused rather than ignored: without a class the Services without
		// one are served anyway, and the operator most likely left class out.
		errs = append(errs, field.Invalid(p.Child("serveDefaultClass"), true, "needs loadBalancer.class: without a class, only the Services without one are served"))
	}
	return errs
}

var stopModes = []StopMode{StopAuto, StopWithdraw, StopGracefulRestart}

func (b *BGP) validate(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(b.Peers) > 0 && b.ASN == 0 {
		errs = append(errs, field.Required(p.Child("asn"), "the speaker's AS number, needed with peers"))
	}
	b.routerID = netip.Addr{}
	if b.RouterID != "" {
		if ip, err := netip.ParseAddr(b.RouterID); err != nil || !ip.Is4() {
			errs = append(errs, field.Invalid(p.Child("routerID"), b.RouterID, "not an IPv4 address"))
		} else if ip.IsUnspecified() {
			errs = append(errs, field.Invalid(p.Child("routerID"), b.RouterID, "must not be 0.0.0.0"))
		} else {
			b.routerID = ip
		}
	}
	if b.MaxPathsPerAddress < 1 || b.MaxPathsPerAddress > limits.MaxNextHops {
		errs = append(errs, field.Invalid(p.Child("maxPathsPerAddress"), b.MaxPathsPerAddress, fmt.Sprintf("must be from 1 to %d", limits.MaxNextHops)))
	}
	if !slices.Contains(stopModes, b.OnStop) {
		errs = append(errs, field.NotSupported(p.Child("onStop"), b.OnStop, stopModes))
	}
	errs = append(errs, b.validateAnnounceFrom(p)...)
	if b.AnnounceFrom != AnnounceFromNodes && b.RouterID == "" && len(b.Peers) > 0 &&
		!slices.ContainsFunc(b.Peers, func(peer BGPPeer) bool { return peer.Interface == "" }) {
		errs = append(errs, field.Required(p.Child("routerID"), "the replicas' router ID: with peers on interfaces only there is no address to derive it from"))
	}
	seen := map[netip.Addr]int{}
	seenIf := map[string]int{}
	for i := range b.Peers {
		peer := &b.Peers[i]
		pp := p.Child("peers").Index(i)
		errs = append(errs, peer.validateInterface(pp)...)
		if j, dup := seenIf[peer.Interface]; dup && peer.Interface != "" {
			errs = append(errs, field.Duplicate(pp.Child("interface"), fmt.Sprintf("%s (also peers[%d])", peer.Interface, j)))
		} else {
			seenIf[peer.Interface] = i
		}
		addr, err := netip.ParseAddr(peer.Address)
		if peer.Address == "" && (peer.Interface != "" || peer.DefaultGateway != "") {
			addr = netip.Addr{} // a link-local session, or a gateway: validateInterface
		} else if peer.Address == "" {
			errs = append(errs, field.Required(pp.Child("address"), "the router's address, or interface for a link-local session, or defaultGateway"))
		} else if err != nil {
			errs = append(errs, field.Invalid(pp.Child("address"), peer.Address, "not an IP address"))
		} else if msg := unicastProblem(addr); msg != "" {
			errs = append(errs, field.Invalid(pp.Child("address"), peer.Address, msg))
			addr = netip.Addr{}
		} else if j, dup := seen[addr]; dup {
			errs = append(errs, field.Duplicate(pp.Child("address"), fmt.Sprintf("%s (also peers[%d])", peer.Address, j)))
		} else {
			seen[addr] = i
		}
		peer.address = addr
		if peer.ASN == 0 {
			errs = append(errs, field.Required(pp.Child("asn"), "the router's AS number"))
		}
		if ht := peer.HoldTime; ht != nil && ht.Duration != 0 && (ht.Duration < limits.MinHoldTime || ht.Duration > limits.MaxHoldTime) {
			errs = append(errs, field.Invalid(pp.Child("holdTime"), ht.Duration.String(),
				fmt.Sprintf("must be 0 or from %s to %s", seconds(limits.MinHoldTime), seconds(limits.MaxHoldTime))))
		}
		peer.localAddress = netip.Addr{}
		if peer.LocalAddress != "" {
			local, err := netip.ParseAddr(peer.LocalAddress)
			if err != nil {
				errs = append(errs, field.Invalid(pp.Child("localAddress"), peer.LocalAddress, "not an IP address"))
			} else if msg := unicastProblem(local); msg != "" {
				errs = append(errs, field.Invalid(pp.Child("localAddress"), peer.LocalAddress, msg))
			} else if addr.IsValid() && local.Is4() != addr.Is4() {
				errs = append(errs, field.Invalid(pp.Child("localAddress"), peer.LocalAddress, "not of the family of the peer's address"))
			} else {
				peer.localAddress = local
			}
		}
		errs = append(errs, peer.BFD.validate(pp.Child("bfd"))...)
		if gr := peer.GracefulRestart; gr != nil && gr.RestartTime != nil &&
			(gr.RestartTime.Duration < limits.MinRestartTime || gr.RestartTime.Duration > limits.MaxRestartTime) {
			errs = append(errs, field.Invalid(pp.Child("gracefulRestart", "restartTime"), gr.RestartTime.Duration.String(),
				fmt.Sprintf("must be from %s to %s", seconds(limits.MinRestartTime), seconds(limits.MaxRestartTime))))
		}
	}
	return errs
}

// seconds writes a whole number of seconds as the docs do ("65535s", not
// "18h12m15s").
func seconds(d time.Duration) string { return fmt.Sprintf("%ds", int64(d/time.Second)) }

// unicastProblem says why addr cannot be a BGP session's end, or "".
func unicastProblem(addr netip.Addr) string {
	switch {
	case addr.IsUnspecified():
		return "must not be the unspecified address"
	case addr.Zone() != "":
		return "must not have a zone"
	case addr.Is4In6():
		return "must be IPv4 or IPv6, not IPv4-mapped"
	case addr.IsMulticast():
		return "must not be a multicast address"
	}
	return ""
}

func (r *Routes) validate(p *field.Path, b *BGP) field.ErrorList {
	var errs field.ErrorList
	if r.NextHopAddressType != v1.NodeInternalIP && r.NextHopAddressType != v1.NodeExternalIP {
		errs = append(errs, field.NotSupported(p.Child("nextHopAddressType"), r.NextHopAddressType,
			[]v1.NodeAddressType{v1.NodeInternalIP, v1.NodeExternalIP}))
	}
	r.clusterCIDRs = nil
	for i, c := range r.ClusterCIDRs {
		pfx, err := ParsePrefix(c)
		if err != nil {
			errs = append(errs, field.Invalid(p.Child("clusterCIDRs").Index(i), c, err.Error()))
			continue
		}
		r.clusterCIDRs = append(r.clusterCIDRs, pfx)
	}
	if !r.Enabled {
		return errs
	}
	if len(b.Peers) == 0 {
		errs = append(errs, field.Required(field.NewPath("bgp", "peers"), "routes.enabled needs at least one BGP peer"))
	}
	for i, peer := range b.Peers {
		if peer.PodRoutes != nil && !*peer.PodRoutes && len(r.ClusterCIDRs) == 0 {
			errs = append(errs, field.Required(p.Child("clusterCIDRs"),
				fmt.Sprintf("bgp.peers[%d].podRoutes is false: the cluster CIDRs tell what not to send it", i)))
			break
		}
	}
	return errs
}

// validateNotNodes refuses a pool that holds an address of a machine of
// the inventory: the machine answers ARP and NDP for its own address, so
// with L2 two hosts would answer, and a /32 of it announced over BGP would
// draw the machine's own traffic to the Service's nodes.
func (lb *LoadBalancer) validateNotNodes(p *field.Path, inventory []Machine) field.ErrorList {
	var errs field.ErrorList
	for i := range lb.Pools {
		pool := &lb.Pools[i]
		for j := range inventory {
			for k, a := range inventory[j].Addresses {
				if a.Type != v1.NodeInternalIP && a.Type != v1.NodeExternalIP {
					continue
				}
				addr, err := netip.ParseAddr(a.Address)
				if err != nil || !slices.ContainsFunc(pool.ranges, func(r ipam.Range) bool { return r.Contains(addr) }) {
					continue
				}
				errs = append(errs, field.Invalid(p.Child("pools").Index(i).Child("addresses"), pool.Addresses,
					fmt.Sprintf("holds %s, an address of the machine %s (nodes.inventory[%d].addresses[%d]): a pool must not hold the nodes' own addresses", addr, inventory[j].Name, j, k)))
			}
		}
	}
	return errs
}
