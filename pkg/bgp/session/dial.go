package session

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// dialTimeout bounds the TCP handshake with the router.
const dialTimeout = 5 * time.Second

// dial opens the TCP connection to the router with the session's socket
// options, set before the SYN: the MD5 key signs it, and its TTL is the
// session's.
func dial(ctx context.Context, c *Config) (net.Conn, error) {
	port := c.Port
	if port == 0 {
		port = DefaultPort
	}
	d := net.Dialer{Timeout: dialTimeout, Control: func(_, _ string, raw syscall.RawConn) error {
		var err error
		if cerr := raw.Control(func(fd uintptr) { err = setSocketOptions(int(fd), c) }); cerr != nil {
			return cerr
		}
		return err
	}}
	if c.LocalAddress.IsValid() {
		local := c.LocalAddress
		if local.Is6() && local.IsLinkLocalUnicast() && local.Zone() == "" {
			local = local.WithZone(c.Neighbor.Zone())
		}
		d.LocalAddr = net.TCPAddrFromAddrPort(netip.AddrPortFrom(local, 0))
	}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(c.Neighbor.String(), strconv.Itoa(int(port))))
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", c.Neighbor, err)
	}
	return conn, nil
}

// setSocketOptions sets the MD5 key and the TTL rules on fd.
func setSocketOptions(fd int, c *Config) error {
	v4 := c.Neighbor.Is4()
	if c.Password != "" {
		sig := unix.TCPMD5Sig{Keylen: uint16(len(c.Password))} //nolint:gosec // validate: at most 80
		copy(sig.Key[:], c.Password)
		setSockaddr(&sig.Addr, c.Neighbor)
		if err := unix.SetsockoptTCPMD5Sig(fd, unix.IPPROTO_TCP, unix.TCP_MD5SIG, &sig); err != nil {
			return fmt.Errorf("TCP MD5 signature: %w", err)
		}
	}
	ttl, minTTL := ttls(c)
	if ttl == 0 {
		return nil
	}
	level, optTTL, optMin := unix.IPPROTO_IP, unix.IP_TTL, unix.IP_MINTTL
	if !v4 {
		level, optTTL, optMin = unix.IPPROTO_IPV6, unix.IPV6_UNICAST_HOPS, unix.IPV6_MINHOPCOUNT
	}
	if err := unix.SetsockoptInt(fd, level, optTTL, ttl); err != nil {
		return fmt.Errorf("TTL: %w", err)
	}
	if minTTL > 0 {
		if err := unix.SetsockoptInt(fd, level, optMin, minTTL); err != nil {
			return fmt.Errorf("minimum TTL: %w", err)
		}
	}
	return nil
}

// ttls are the TTL the session's packets leave with and the least one it
// takes (0: the kernel's default, and any): GTSM sends 255 and takes what
// came at most the router's hops away; eBGP sends 1, or MultihopTTL; iBGP
// keeps the defaults.
func ttls(c *Config) (ttl, minTTL int) {
	hops := max(int(c.MultihopTTL), 1)
	switch {
	case c.TTLSecurity:
		return 255, 256 - hops
	case c.LocalASN == c.PeerASN:
		return 0, 0
	default:
		return hops, 0
	}
}

// setSockaddr writes a's socket address (port 0) into s, as the kernel
// reads it for TCP_MD5SIG: a sockaddr_in or sockaddr_in6.
func setSockaddr(s *unix.SockaddrStorage, a netip.Addr) {
	if a.Is4() {
		s.Family = unix.AF_INET
		b := a.As4()
		copy(s.Data[2:6], b[:]) // after the port
		return
	}
	s.Family = unix.AF_INET6
	b := a.As16()
	copy(s.Data[6:22], b[:]) // after the port and the flow label
	if a.Zone() != "" {
		if ifi, err := net.InterfaceByName(a.Zone()); err == nil {
			binary.NativeEndian.PutUint32(s.Data[22:26], uint32(ifi.Index)) //nolint:gosec // an interface index
		}
	}
}
