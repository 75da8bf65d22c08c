package l2

import (
	"net"
	"net/netip"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/ndp"
	"golang.org/x/net/ipv6"
)

// claim is a host saying that it holds an address: the sender of an ARP
// packet (a reply, an announcement, or a question asked from the address),
// or the target of a Neighbor Advertisement. mac is its hardware address,
// nil when the message does not give it.
type claim struct {
	addr netip.Addr
	mac  net.HardwareAddr
}

// arpClaim is the claim an ARP frame makes, if any. A probe (sender
// 0.0.0.0) claims nothing (RFC 5227 2.1.1): it asks whether the address is
// free.
func arpClaim(frame []byte) (claim, bool) {
	var f ethernet.Frame
	if err := f.UnmarshalBinary(frame); err != nil || f.EtherType != ethernet.EtherTypeARP {
		return claim{}, false
	}
	var p arp.Packet
	if err := p.UnmarshalBinary(f.Payload); err != nil {
		return claim{}, false
	}
	if !p.SenderIP.IsValid() || p.SenderIP.IsUnspecified() {
		return claim{}, false
	}
	return claim{addr: p.SenderIP, mac: p.SenderHardwareAddr}, true
}

// ndpClaim is the claim a message read on the interface index makes, if
// any: a Neighbor Advertisement sent on the link (hop limit 255, RFC 4861
// 7.1.2), for its target, with the target link-layer address it carries.
func ndpClaim(index int, m ndp.Message, cm *ipv6.ControlMessage) (claim, bool) {
	na, ok := m.(*ndp.NeighborAdvertisement)
	if !ok || cm == nil || cm.IfIndex != index || cm.HopLimit != ndp.HopLimit {
		return claim{}, false
	}
	return claim{addr: na.TargetAddress.WithZone(""), mac: targetLinkLayer(na)}, true
}

func targetLinkLayer(na *ndp.NeighborAdvertisement) net.HardwareAddr {
	for _, o := range na.Options {
		if lla, ok := o.(*ndp.LinkLayerAddress); ok && lla.Direction == ndp.Target {
			return lla.Addr
		}
	}
	return nil
}
