package l2

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/ndp"
	"github.com/mdlayher/packet"
	"golang.org/x/net/ipv6"
)

// ProbeWindow is how long a probe listens for a host that already holds
// the address before this node claims it. RFC 5227 waits seconds, for
// hosts that boot together; here the address has been in use (by the
// cluster) all along and a host that holds it answers a question at once,
// within milliseconds on a segment, so a short window catches it without
// adding more than this to a failover (whose bound is about 2 s).
const ProbeWindow = 150 * time.Millisecond

// etherTypeIPv6 frames carry the Duplicate Address Detection probes.
const etherTypeIPv6 = 0x86dd

// probe asks once, on ifc, whether some host holds each of addrs (an ARP
// Probe, RFC 5227 2.1.1; a Neighbor Solicitation from the unspecified
// address, RFC 4862 5.4.2, which a holder answers to all nodes), and listens
// for window. It returns the addresses that a host whose MAC foreign
// accepts claimed meanwhile, with that MAC (nil when unknown). Its sockets
// are its own, opened in the network namespace of the calling thread and
// closed before it returns: a probe needs no answering socket, and it also
// serves addresses this node does not answer (a conflict's re-probes).
func probe(ctx context.Context, ifc iface, addrs []netip.Addr, window time.Duration, foreign func(net.HardwareAddr) bool) (map[netip.Addr]net.HardwareAddr, error) {
	return startProbe(ctx, ifc, addrs, window, foreign)()
}

// startProbe opens the sockets of a probe on the calling thread, sends the
// probes and returns what waits for the end of the window: probes on
// several interfaces share one window.
func startProbe(ctx context.Context, ifc iface, addrs []netip.Addr, window time.Duration, foreign func(net.HardwareAddr) bool) func() (map[netip.Addr]net.HardwareAddr, error) {
	var v4, v6 []netip.Addr
	for _, a := range addrs {
		if a.Is4() {
			v4 = append(v4, a)
		} else {
			v6 = append(v6, a)
		}
	}
	deadline := time.Now().Add(window)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	var (
		mu    sync.Mutex
		found = map[netip.Addr]net.HardwareAddr{}
		wg    sync.WaitGroup
		errs  = make([]error, 2)
	)
	seen := func(addrs []netip.Addr) func(claim) {
		return func(c claim) {
			if !contains(addrs, c.addr) || !foreign(c.mac) {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if _, ok := found[c.addr]; !ok {
				found[c.addr] = c.mac
			}
		}
	}
	// Both sockets open before the calling thread may change namespaces
	// back: the goroutines below run on other threads.
	var a *packet.Conn
	var n *ndp.Conn
	var send *packet.Conn
	var err error
	if len(v4) > 0 {
		if a, err = packet.Listen(ifc.netInterface(), packet.Raw, int(ethernet.EtherTypeARP), nil); err != nil {
			errs[0] = fmt.Errorf("probe socket (ARP) on %s: %w", ifc.Name, err)
		}
	}
	if len(v6) > 0 {
		if n, send, err = openDAD(ifc); err != nil {
			errs[1] = err
		}
	}
	if a != nil {
		wg.Go(func() { errs[0] = probeARP(a, ifc, v4, deadline, seen(v4)) })
	}
	if n != nil {
		wg.Go(func() { errs[1] = probeNDP(n, send, ifc, v6, deadline, seen(v6)) })
	}
	return func() (map[netip.Addr]net.HardwareAddr, error) {
		wg.Wait()
		return found, errors.Join(errs...)
	}
}

func contains(addrs []netip.Addr, a netip.Addr) bool {
	for _, x := range addrs {
		if x == a {
			return true
		}
	}
	return false
}

// probeARP sends an ARP Probe for each address (sender IP 0.0.0.0, so that
// no cache learns anything from it) and reads the claims until deadline.
func probeARP(pc *packet.Conn, ifc iface, addrs []netip.Addr, deadline time.Time, seen func(claim)) error {
	defer func() { _ = pc.Close() }()
	c := &arpConn{ifc: ifc, pc: pc}
	for _, addr := range addrs {
		p, err := arp.NewPacket(arp.OperationRequest, ifc.HardwareAddr, netip.IPv4Unspecified(), make(net.HardwareAddr, 6), addr)
		if err != nil {
			return fmt.Errorf("build ARP probe for %s: %w", addr, err)
		}
		if err := c.write(p, ethernet.Broadcast); err != nil {
			return err
		}
	}
	if err := pc.SetReadDeadline(deadline); err != nil {
		return fmt.Errorf("probe socket (ARP) on %s: %w", ifc.Name, err)
	}
	buf := make([]byte, 1514)
	for {
		frame, err := c.read(buf)
		if err != nil {
			return readEnd(err)
		}
		if cl, ok := arpClaim(frame); ok {
			seen(cl)
		}
	}
}

// openDAD opens what a Duplicate Address Detection probe needs: a raw
// ICMPv6 socket that sees Neighbor Advertisements, and a packet socket that
// receives nothing, to send the solicitations from the unspecified address
// (an ICMPv6 socket cannot: the kernel puts one of its addresses as the
// source of what it sends).
func openDAD(ifc iface) (*ndp.Conn, *packet.Conn, error) {
	n, _, err := ndp.Listen(ifc.netInterface(), ndp.Unspecified)
	if err != nil {
		return nil, nil, fmt.Errorf("probe socket (NDP) on %s: %w", ifc.Name, err)
	}
	var f ipv6.ICMPFilter
	f.SetAll(true)
	f.Accept(ipv6.ICMPTypeNeighborAdvertisement)
	if err := n.SetICMPFilter(&f); err != nil {
		_ = n.Close()
		return nil, nil, fmt.Errorf("filter probe socket (NDP) on %s: %w", ifc.Name, err)
	}
	if err := n.SetControlMessage(ipv6.FlagHopLimit|ipv6.FlagInterface, true); err != nil {
		_ = n.Close()
		return nil, nil, fmt.Errorf("probe socket (NDP) options on %s: %w", ifc.Name, err)
	}
	send, err := packet.Listen(ifc.netInterface(), packet.Raw, 0, nil)
	if err != nil {
		_ = n.Close()
		return nil, nil, fmt.Errorf("probe socket (DAD) on %s: %w", ifc.Name, err)
	}
	return n, send, nil
}

// probeNDP sends a Duplicate Address Detection solicitation for each
// address and reads the advertisements until deadline.
func probeNDP(n *ndp.Conn, send *packet.Conn, ifc iface, addrs []netip.Addr, deadline time.Time, seen func(claim)) error {
	defer func() { _ = n.Close(); _ = send.Close() }()
	for _, addr := range addrs {
		frame, dst, err := dadFrame(ifc.HardwareAddr, addr)
		if err != nil {
			return err
		}
		if _, err := send.WriteTo(frame, &packet.Addr{HardwareAddr: dst}); err != nil {
			return fmt.Errorf("send DAD probe for %s on %s: %w", addr, ifc.Name, err)
		}
	}
	if err := n.SetReadDeadline(deadline); err != nil {
		return fmt.Errorf("probe socket (NDP) on %s: %w", ifc.Name, err)
	}
	c := &ndpConn{ifc: ifc, c: n}
	buf := make([]byte, max(ifc.MTU, 1500))
	for {
		m, cm, _, err := c.read(buf)
		if err != nil {
			return readEnd(err)
		}
		if cl, ok := ndpClaim(ifc.Index, m, cm); ok {
			seen(cl)
		}
	}
}

// readEnd is nil for the read that ends at the deadline.
func readEnd(err error) error {
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		return nil
	}
	return err
}

// dadFrame is the Ethernet frame of a Duplicate Address Detection probe for
// target: a Neighbor Solicitation from :: to target's solicited-node group,
// with no source link-layer option (RFC 4861 7.2.2 forbids it from ::), and
// the MAC it goes to.
func dadFrame(src net.HardwareAddr, target netip.Addr) ([]byte, net.HardwareAddr, error) {
	group, err := ndp.SolicitedNodeMulticast(target)
	if err != nil {
		return nil, nil, fmt.Errorf("DAD probe for %s: %w", target, err)
	}
	msg, err := ndp.MarshalMessage(&ndp.NeighborSolicitation{TargetAddress: target})
	if err != nil {
		return nil, nil, fmt.Errorf("DAD probe for %s: %w", target, err)
	}
	g := group.As16()
	dst := net.HardwareAddr{0x33, 0x33, g[12], g[13], g[14], g[15]}
	ip := make([]byte, 40, 40+len(msg))
	ip[0] = 0x60
	binary.BigEndian.PutUint16(ip[4:], uint16(len(msg))) //nolint:gosec // 24 bytes
	ip[6] = 58                                           // ICMPv6
	ip[7] = ndp.HopLimit
	copy(ip[24:40], g[:]) // the source, ip[8:24], stays ::
	binary.BigEndian.PutUint16(msg[2:], icmpv6Checksum(ip[8:24], ip[24:40], msg))
	frame, err := (&ethernet.Frame{Destination: dst, Source: src, EtherType: etherTypeIPv6, Payload: append(ip, msg...)}).MarshalBinary()
	if err != nil {
		return nil, nil, fmt.Errorf("DAD probe for %s: %w", target, err)
	}
	return frame, dst, nil
}

// icmpv6Checksum is the checksum of msg (its own checksum field zero) with
// the IPv6 pseudo-header of src and dst (RFC 4443 2.3).
func icmpv6Checksum(src, dst, msg []byte) uint16 {
	var sum uint32
	add := func(b []byte) {
		for i := 0; i+1 < len(b); i += 2 {
			sum += uint32(b[i])<<8 | uint32(b[i+1])
		}
		if len(b)%2 == 1 {
			sum += uint32(b[len(b)-1]) << 8
		}
	}
	add(src)
	add(dst)
	sum += uint32(len(msg)) //nolint:gosec // a message of an Ethernet frame
	sum += 58
	add(msg)
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}
