package config

import (
	"net/netip"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateInterface checks a peer's interface and linkLocalAddress, and
// the fields a link-local session cannot have; it parses linkLocalAddress.
func (peer *BGPPeer) validateInterface(pp *field.Path) field.ErrorList {
	var errs field.ErrorList
	peer.linkLocalAddress = netip.Addr{}
	if g := peer.DefaultGateway; g != "" {
		gp := pp.Child("defaultGateway")
		switch {
		case g != DefaultGatewayIPv4 && g != DefaultGatewayIPv6:
			errs = append(errs, field.NotSupported(gp, g, []DefaultGatewayFamily{DefaultGatewayIPv4, DefaultGatewayIPv6}))
		case peer.Address != "" || peer.Interface != "":
			errs = append(errs, field.Invalid(gp, g, "give address, interface or defaultGateway, one of them"))
		}
	}
	if peer.Interface == "" {
		if peer.LinkLocalAddress != "" {
			errs = append(errs, field.Invalid(pp.Child("linkLocalAddress"), peer.LinkLocalAddress, "only with interface"))
		}
		return errs
	}
	ip := pp.Child("interface")
	if n := peer.Interface; len(n) > maxInterfaceName {
		errs = append(errs, field.TooLong(ip, n, maxInterfaceName))
	} else if !interfaceName(n) {
		errs = append(errs, field.Invalid(ip, n, "not an interface name"))
	}
	if peer.Address != "" {
		errs = append(errs, field.Invalid(ip, peer.Interface, "give address or interface, not both"))
	}
	if peer.LinkLocalAddress != "" {
		a, err := netip.ParseAddr(peer.LinkLocalAddress)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(pp.Child("linkLocalAddress"), peer.LinkLocalAddress, "not an IP address"))
		case !a.Is6() || !a.IsLinkLocalUnicast():
			errs = append(errs, field.Invalid(pp.Child("linkLocalAddress"), peer.LinkLocalAddress, "not an IPv6 link-local address (fe80::/10)"))
		case a.Zone() != "":
			errs = append(errs, field.Invalid(pp.Child("linkLocalAddress"), peer.LinkLocalAddress, "must not have a zone: interface is the zone"))
		default:
			peer.linkLocalAddress = a
		}
	}
	if peer.LocalAddress != "" {
		errs = append(errs, field.Invalid(pp.Child("localAddress"), peer.LocalAddress, "not with interface: the session's source is the interface's link-local address"))
	}
	if peer.EBGPMultihop != 0 {
		errs = append(errs, field.Invalid(pp.Child("ebgpMultihop"), peer.EBGPMultihop, "not with interface: a link-local router is one hop away"))
	}
	return errs
}
