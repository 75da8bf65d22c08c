package l2

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/packet"
)

// arpConn is an ARP packet socket bound to one interface. It is built on
// mdlayher/packet rather than arp.Dial because arp.Dial needs an IPv4
// address on the interface, which a named interface (Options.Interfaces)
// need not have: the replies carry the LoadBalancer address, not the
// interface's.
type arpConn struct {
	ifc    iface
	pc     *packet.Conn
	closed atomic.Bool
}

func openARP(ifc iface) (*arpConn, error) {
	pc, err := packet.Listen(ifc.netInterface(), packet.Raw, int(ethernet.EtherTypeARP), nil)
	if err != nil {
		return nil, fmt.Errorf("open ARP socket on %s: %w", ifc.Name, err)
	}
	return &arpConn{ifc: ifc, pc: pc}, nil
}

// close marks the conn closed first, so that its reader takes the error
// from the blocked read for the end it is and not for a fault.
func (c *arpConn) close() error {
	c.closed.Store(true)
	if err := c.pc.Close(); err != nil {
		return fmt.Errorf("close ARP socket on %s: %w", c.ifc.Name, err)
	}
	return nil
}

// read returns the next frame's bytes in buf.
func (c *arpConn) read(buf []byte) ([]byte, error) {
	n, _, err := c.pc.ReadFrom(buf)
	if err != nil {
		return nil, fmt.Errorf("read ARP on %s: %w", c.ifc.Name, err)
	}
	return buf[:n], nil
}

func (c *arpConn) write(p *arp.Packet, dst net.HardwareAddr) error {
	pb, err := p.MarshalBinary()
	if err != nil {
		return fmt.Errorf("marshal ARP packet: %w", err)
	}
	fb, err := (&ethernet.Frame{Destination: dst, Source: c.ifc.HardwareAddr, EtherType: ethernet.EtherTypeARP, Payload: pb}).MarshalBinary()
	if err != nil {
		return fmt.Errorf("marshal Ethernet frame: %w", err)
	}
	if _, err := c.pc.WriteTo(fb, &packet.Addr{HardwareAddr: dst}); err != nil {
		return fmt.Errorf("send ARP on %s: %w", c.ifc.Name, err)
	}
	return nil
}

// announce sends a gratuitous ARP for addr: an ARP Announcement (RFC 5227),
// a broadcast request whose sender and target are both addr, which every
// host on the segment with an entry for addr takes to update it.
func (c *arpConn) announce(addr netip.Addr) error {
	p, err := arp.NewPacket(arp.OperationRequest, c.ifc.HardwareAddr, addr, ethernet.Broadcast, addr)
	if err != nil {
		return fmt.Errorf("build gratuitous ARP for %s: %w", addr, err)
	}
	// The target hardware address of an announcement is zero (RFC 5227 2.3);
	// NewPacket copied the broadcast address there.
	p.TargetHardwareAddr = make(net.HardwareAddr, 6)
	return c.write(p, ethernet.Broadcast)
}

// arpReply decides about one received frame: it returns the reply to send
// and where, or ok false for a frame not to answer. ours tells whether an
// address is answered on this interface. Our own frames (the packet socket
// also sees what this interface sends) and announcements by others (sender
// and target the same: a claim, not a question) are not answered.
func arpReply(mac net.HardwareAddr, frame []byte, ours func(netip.Addr) bool) (reply *arp.Packet, dst net.HardwareAddr, ok bool) {
	var f ethernet.Frame
	if err := f.UnmarshalBinary(frame); err != nil || f.EtherType != ethernet.EtherTypeARP {
		return nil, nil, false
	}
	var req arp.Packet
	if err := req.UnmarshalBinary(f.Payload); err != nil {
		return nil, nil, false
	}
	if req.Operation != arp.OperationRequest || bytes.Equal(req.SenderHardwareAddr, mac) || bytes.Equal(f.Source, mac) {
		return nil, nil, false
	}
	if req.SenderIP == req.TargetIP || !ours(req.TargetIP) {
		return nil, nil, false
	}
	reply, err := arp.NewPacket(arp.OperationReply, mac, req.TargetIP, req.SenderHardwareAddr, req.SenderIP)
	if err != nil {
		return nil, nil, false
	}
	return reply, req.SenderHardwareAddr, true
}
