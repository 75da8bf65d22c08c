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
		for j, a := range pool.Addresses {
			ap := pp.Child("addresses").Index(j)
			r, err := ipam.ParseRange(a)
			if err != nil {
				errs = append(errs, field.Invalid(ap, a, err.Error()))
				continue
			}
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
			if _, err := metav1.LabelSelectorAsSelector(pool.ServiceSelector); err != nil {
				errs = append(errs, field.Invalid(pp.Child("serviceSelector"), pool.ServiceSelector, err.Error()))
			}
		}
	}
	return errs
}

var stopModes = []StopMode{StopAuto, StopWithdraw, StopGracefulRestart}

func (b *BGP) validate(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(b.Peers) > 0 && b.ASN == 0 {
		errs = append(errs, field.Required(p.Child("asn"), "the speaker's AS number, needed with peers"))
	}
	if b.RouterID != "" {
		if ip, err := netip.ParseAddr(b.RouterID); err != nil || !ip.Is4() {
			errs = append(errs, field.Invalid(p.Child("routerID"), b.RouterID, "not an IPv4 address"))
		} else if ip.IsUnspecified() {
			errs = append(errs, field.Invalid(p.Child("routerID"), b.RouterID, "must not be 0.0.0.0"))
		}
	} else if len(b.Peers) > 0 && !hasIPv4Peer(b.Peers) {
		errs = append(errs, field.Required(p.Child("routerID"), "no IPv4 peer to derive it from"))
	}
	if b.MaxPathsPerAddress < 1 || b.MaxPathsPerAddress > 255 {
		errs = append(errs, field.Invalid(p.Child("maxPathsPerAddress"), b.MaxPathsPerAddress, "must be from 1 to 255"))
	}
	if !slices.Contains(stopModes, b.OnStop) {
		errs = append(errs, field.NotSupported(p.Child("onStop"), b.OnStop, stopModes))
	}
	seen := map[netip.Addr]int{}
	for i := range b.Peers {
		peer := &b.Peers[i]
		pp := p.Child("peers").Index(i)
		addr, err := netip.ParseAddr(peer.Address)
		if err != nil {
			errs = append(errs, field.Invalid(pp.Child("address"), peer.Address, "not an IP address"))
		} else if msg := unicastProblem(addr); msg != "" {
			errs = append(errs, field.Invalid(pp.Child("address"), peer.Address, msg))
			addr = netip.Addr{}
		} else if j, dup := seen[addr]; dup {
			errs = append(errs, field.Duplicate(pp.Child("address"), fmt.Sprintf("%s (also peers[%d])", peer.Address, j)))
		} else {
			seen[addr] = i
		}
		if peer.ASN == 0 {
			errs = append(errs, field.Required(pp.Child("asn"), "the router's AS number"))
		}
		if ht := peer.HoldTime; ht != nil && ht.Duration != 0 && (ht.Duration < 3*time.Second || ht.Duration > 65535*time.Second) {
			errs = append(errs, field.Invalid(pp.Child("holdTime"), ht.Duration.String(), "must be 0 or from 3s to 65535s"))
		}
		if peer.LocalAddress != "" {
			local, err := netip.ParseAddr(peer.LocalAddress)
			if err != nil {
				errs = append(errs, field.Invalid(pp.Child("localAddress"), peer.LocalAddress, "not an IP address"))
			} else if msg := unicastProblem(local); msg != "" {
				errs = append(errs, field.Invalid(pp.Child("localAddress"), peer.LocalAddress, msg))
			} else if addr.IsValid() && local.Is4() != addr.Is4() {
				errs = append(errs, field.Invalid(pp.Child("localAddress"), peer.LocalAddress, "not of the family of the peer's address"))
			}
		}
		if gr := peer.GracefulRestart; gr != nil && gr.RestartTime != nil &&
			(gr.RestartTime.Duration < time.Second || gr.RestartTime.Duration > 4095*time.Second) {
			errs = append(errs, field.Invalid(pp.Child("gracefulRestart", "restartTime"), gr.RestartTime.Duration.String(), "must be from 1s to 4095s"))
		}
	}
	return errs
}

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

// hasIPv4Peer reports whether a peer has an IPv4 address (the default
// router ID is derived from the first one).
func hasIPv4Peer(peers []BGPPeer) bool {
	for _, p := range peers {
		if a, err := netip.ParseAddr(p.Address); err == nil && a.Is4() {
			return true
		}
	}
	return false
}

func (r *Routes) validate(p *field.Path, b *BGP) field.ErrorList {
	var errs field.ErrorList
	if r.NextHopAddressType != v1.NodeInternalIP && r.NextHopAddressType != v1.NodeExternalIP {
		errs = append(errs, field.NotSupported(p.Child("nextHopAddressType"), r.NextHopAddressType,
			[]v1.NodeAddressType{v1.NodeInternalIP, v1.NodeExternalIP}))
	}
	for i, c := range r.ClusterCIDRs {
		if _, err := ParsePrefix(c); err != nil {
			errs = append(errs, field.Invalid(p.Child("clusterCIDRs").Index(i), c, err.Error()))
		}
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
