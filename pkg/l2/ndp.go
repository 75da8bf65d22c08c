package l2

import (
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"

	"github.com/mdlayher/ndp"
	"golang.org/x/net/ipv6"
)

// allNodes is where unsolicited Neighbor Advertisements and the answers to
// Duplicate Address Detection go (RFC 4861 7.2.4, 7.2.6).
var allNodes = netip.MustParseAddr("ff02::1")

// ndpConn is a raw ICMPv6 socket for one interface that sees only
// Neighbor Solicitations and Advertisements (the latter for the conflicts
// of conflict.go). It is bound to no address of the interface (a
// link-local one may still be tentative when the first LoadBalancer
// address arrives), so it hears every interface: the reader keeps to its
// own by the packet's interface index.
type ndpConn struct {
	ifc    iface
	c      *ndp.Conn
	closed atomic.Bool
	// groups counts the answered addresses per solicited-node multicast
	// group: addresses that share their last 24 bits share a group, and a
	// socket may join a group once.
	groups map[netip.Addr]int
}

func openNDP(ifc iface) (*ndpConn, error) {
	c, _, err := ndp.Listen(ifc.netInterface(), ndp.Unspecified)
	if err != nil {
		return nil, fmt.Errorf("open NDP socket on %s: %w", ifc.Name, err)
	}
	nc := &ndpConn{ifc: ifc, c: c, groups: map[netip.Addr]int{}}
	var f ipv6.ICMPFilter
	f.SetAll(true)
	f.Accept(ipv6.ICMPTypeNeighborSolicitation)
	f.Accept(ipv6.ICMPTypeNeighborAdvertisement)
	if err := c.SetICMPFilter(&f); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("filter NDP socket on %s: %w", ifc.Name, err)
	}
	if err := c.SetControlMessage(ipv6.FlagHopLimit|ipv6.FlagInterface, true); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("set NDP socket options on %s: %w", ifc.Name, err)
	}
	return nc, nil
}

func (c *ndpConn) close() error {
	c.closed.Store(true)
	if err := c.c.Close(); err != nil {
		return fmt.Errorf("close NDP socket on %s: %w", c.ifc.Name, err)
	}
	return nil
}

// join joins the solicited-node multicast group of addr: solicitations for
// addr are sent there, and the kernel drops multicast for groups no socket
// of the interface has joined.
func (c *ndpConn) join(addr netip.Addr) error {
	g, err := ndp.SolicitedNodeMulticast(addr)
	if err != nil {
		return fmt.Errorf("solicited-node group of %s: %w", addr, err)
	}
	if c.groups[g] == 0 {
		if err := c.c.JoinGroup(g); err != nil {
			return fmt.Errorf("join %s on %s for %s: %w", g, c.ifc.Name, addr, err)
		}
	}
	c.groups[g]++
	return nil
}

func (c *ndpConn) leave(addr netip.Addr) error {
	g, err := ndp.SolicitedNodeMulticast(addr)
	if err != nil {
		return fmt.Errorf("solicited-node group of %s: %w", addr, err)
	}
	if c.groups[g] == 0 {
		return nil
	}
	c.groups[g]--
	if c.groups[g] > 0 {
		return nil
	}
	delete(c.groups, g)
	if err := c.c.LeaveGroup(g); err != nil {
		return fmt.Errorf("leave %s on %s for %s: %w", g, c.ifc.Name, addr, err)
	}
	return nil
}

// read returns the next message, its control message and its source. It
// reads raw bytes rather than with ReadFrom, which drops messages from the
// socket's own address: for a socket bound to :: that is every Duplicate
// Address Detection probe.
func (c *ndpConn) read(buf []byte) (ndp.Message, *ipv6.ControlMessage, netip.Addr, error) {
	for {
		n, cm, src, err := c.c.ReadRaw(buf)
		if err != nil {
			return nil, nil, netip.Addr{}, fmt.Errorf("read NDP on %s: %w", c.ifc.Name, err)
		}
		m, err := ndp.ParseMessage(buf[:n])
		if err != nil {
			continue // not ours to judge: a malformed message is not answered
		}
		return m, cm, src, nil
	}
}

func (c *ndpConn) write(na *ndp.NeighborAdvertisement, dst netip.Addr) error {
	// No source address: the kernel picks one of the interface's, as RFC
	// 4861 wants; the hop limit must be 255 or receivers drop the message.
	cm := &ipv6.ControlMessage{HopLimit: ndp.HopLimit, IfIndex: c.ifc.Index}
	if err := c.c.WriteTo(na, cm, dst); err != nil {
		return fmt.Errorf("send Neighbor Advertisement for %s on %s: %w", na.TargetAddress, c.ifc.Name, err)
	}
	return nil
}

// announce sends an unsolicited Neighbor Advertisement for addr to all
// nodes, with Override so that caches that hold another node's MAC for addr
// take ours (RFC 4861 7.2.6).
func (c *ndpConn) announce(addr netip.Addr) error {
	return c.write(advertisement(c.ifc.HardwareAddr, addr, false), allNodes)
}

func advertisement(mac net.HardwareAddr, target netip.Addr, solicited bool) *ndp.NeighborAdvertisement {
	return &ndp.NeighborAdvertisement{
		Solicited:     solicited,
		Override:      true,
		TargetAddress: target,
		Options:       []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Target, Addr: mac}},
	}
}

// ndpReply decides about one received message: it returns the
// advertisement to send and where, or ok false for one not to answer.
// index is the interface's: the socket hears all of them. Only
// solicitations with hop limit 255 (sent on the link, RFC 4861 7.1.1) whose
// target is an address answered here get an answer: Solicited and Override
// set, with our MAC as the target link-layer address, sent to the
// solicitor; or, when the solicitor has no address yet (Duplicate Address
// Detection), to all nodes, neither Solicited nor Override.
func ndpReply(mac net.HardwareAddr, index int, m ndp.Message, cm *ipv6.ControlMessage, src netip.Addr, ours func(netip.Addr) bool) (na *ndp.NeighborAdvertisement, dst netip.Addr, ok bool) {
	ns, isNS := m.(*ndp.NeighborSolicitation)
	if !isNS || cm == nil || cm.IfIndex != index || cm.HopLimit != ndp.HopLimit {
		return nil, netip.Addr{}, false
	}
	if !ours(ns.TargetAddress) {
		return nil, netip.Addr{}, false
	}
	if src.WithZone("").IsUnspecified() {
		// Without Override: the answer tells a host doing Duplicate Address
		// Detection that the address is taken (any advertisement does), and
		// must not move the caches of every host on the link to this node.
		// The prober may be the node taking the address over from this one
		// (conflict.go's probes), whose announcements follow: an
		// overriding answer, multicast to all, would point the clients back
		// here for the seconds until its repeats.
		na := advertisement(mac, ns.TargetAddress, false)
		na.Override = false
		return na, allNodes, true
	}
	return advertisement(mac, ns.TargetAddress, true), src, true
}
