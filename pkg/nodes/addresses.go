package nodes

import (
	"fmt"
	"net"
	"net/netip"

	v1 "k8s.io/api/core/v1"
)

// InternalIP is the node's first InternalIP of one family (IPv4 when v4):
// the address the node agents' sessions, membership and router IDs use.
func InternalIP(n *v1.Node, v4 bool) (netip.Addr, bool) {
	for _, a := range n.Status.Addresses {
		if a.Type != v1.NodeInternalIP {
			continue
		}
		if ip, err := netip.ParseAddr(a.Address); err == nil && ip.Unmap().Is4() == v4 {
			return ip.Unmap(), true
		}
	}
	return netip.Addr{}, false
}

// PrimaryInternalIP is the node's address among the agents: its first
// IPv4 InternalIP, else (an IPv6-only node) its first IPv6 InternalIP. The
// agents' L2 membership binds to it and finds its peers by it, and their
// BGP router ID comes from it.
func PrimaryInternalIP(n *v1.Node) (netip.Addr, bool) {
	if ip, ok := InternalIP(n, true); ok {
		return ip, true
	}
	return InternalIP(n, false)
}

// SourceToward is the kernel's source address for packets to dst: the
// local address of a UDP socket connected to it, which sends nothing.
func SourceToward(dst netip.AddrPort) (netip.Addr, error) {
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(dst))
	if err != nil {
		return netip.Addr{}, fmt.Errorf("no route to %s: %w", dst.Addr(), err)
	}
	defer func() { _ = c.Close() }()
	return c.LocalAddr().(*net.UDPAddr).AddrPort().Addr().Unmap(), nil
}

// InternalIPs are all the node's InternalIPs.
func InternalIPs(n *v1.Node) []netip.Addr {
	var out []netip.Addr
	for _, a := range n.Status.Addresses {
		if a.Type != v1.NodeInternalIP {
			continue
		}
		if ip, err := netip.ParseAddr(a.Address); err == nil {
			out = append(out, ip.Unmap())
		}
	}
	return out
}
