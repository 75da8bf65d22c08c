package netlab

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/metal-ccm/metal-ccm/test/framework"
)

// pingInterval is the time between two echo requests of ping.
const pingInterval = 200 * time.Millisecond

// ICMP types of the echo exchange.
const (
	icmpEchoRequest4 = 8
	icmpEchoReply4   = 0
	icmpEchoRequest6 = 128
	icmpEchoReply6   = 129
)

// ClientPing sends ICMP echo requests from the client namespace to addr,
// one each 200 ms, until one is answered (nil) or ctx ends (the error).
// The address must be in the lab ranges. It needs no ping binary: the
// socket is made in the namespace by the test process.
func (l *L2Lab) ClientPing(ctx context.Context, addr netip.Addr) error {
	return ping(ctx, l.Client, addr)
}

// ping sends echo requests from namespace ns to addr until one is answered
// or ctx ends.
func ping(ctx context.Context, ns string, addr netip.Addr) error {
	if err := checkAddr(addr); err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	addr = addr.Unmap()
	network, laddr, request, reply := "ip4:icmp", "0.0.0.0", byte(icmpEchoRequest4), byte(icmpEchoReply4)
	if addr.Is6() {
		network, laddr, request, reply = "ip6:ipv6-icmp", "::", icmpEchoRequest6, icmpEchoReply6
	}
	var conn net.PacketConn
	if err := framework.RunInNetNS(ns, func() error {
		var err error
		conn, err = net.ListenPacket(network, laddr)
		return err
	}); err != nil {
		return fmt.Errorf("ping %s from %s: %w", addr, ns, err)
	}
	defer func() { _ = conn.Close() }()
	var id [2]byte
	if _, err := rand.Read(id[:]); err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	dst := &net.IPAddr{IP: addr.AsSlice()}
	buf := make([]byte, 1500)
	for seq := uint16(1); ; seq++ {
		msg := echoRequest(request, binary.BigEndian.Uint16(id[:]), seq, addr.Is4())
		if _, err := conn.WriteTo(msg, dst); err != nil {
			return fmt.Errorf("ping %s from %s: %w", addr, ns, err)
		}
		deadline := time.Now().Add(pingInterval)
		if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
			deadline = d
		}
		if err := conn.SetReadDeadline(deadline); err != nil {
			return fmt.Errorf("ping: %w", err)
		}
		for {
			n, from, err := conn.ReadFrom(buf)
			if err != nil {
				if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
					break
				}
				return fmt.Errorf("ping %s from %s: %w", addr, ns, err)
			}
			src, ok := from.(*net.IPAddr)
			if !ok || n < 8 || buf[0] != reply || buf[1] != 0 {
				continue
			}
			if a, _ := netip.AddrFromSlice(src.IP); a.Unmap() != addr {
				continue
			}
			// Any sequence number of this run answers: a late reply to an
			// earlier request shows the address answers as well.
			if [2]byte(buf[4:6]) == id {
				return nil
			}
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("ping %s from %s: no answer: %w", addr, ns, err)
		}
	}
}

// isTimeout reports a read deadline that passed.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// echoRequest is an ICMP (ICMPv6 with v4 false) echo request with a small
// payload. The ICMPv6 checksum is left to the kernel (raw ICMPv6 sockets
// compute it); the ICMP one is computed here.
func echoRequest(typ byte, id, seq uint16, v4 bool) []byte {
	msg := make([]byte, 8, 8+8)
	msg[0] = typ
	binary.BigEndian.PutUint16(msg[4:], id)
	binary.BigEndian.PutUint16(msg[6:], seq)
	msg = append(msg, "netlab.."...)
	if v4 {
		binary.BigEndian.PutUint16(msg[2:], internetChecksum(msg))
	}
	return msg
}

// internetChecksum is the checksum of RFC 1071.
func internetChecksum(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}
