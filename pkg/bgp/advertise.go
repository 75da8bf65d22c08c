package bgp

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sys/unix"
)

// selfAdvertInterval is how often the speaker announces itself on the link
// of a peer on an interface. A router that learns its unnumbered
// neighbours from Router Advertisements (FRR's "neighbor IFACE
// interface") accepts no session before it has one; another one after a
// router restart comes within this.
const selfAdvertInterval = 10 * time.Second

// routerAdvert is an ICMPv6 Router Advertisement with a router lifetime of
// 0 (RFC 4861 4.2): it names its source as a neighbour on the link and
// offers no default route, no prefix and no parameters. The kernel fills
// in the checksum of a raw ICMPv6 socket's packets.
func routerAdvert() []byte {
	ra := make([]byte, 16)
	ra[0] = 134 // type: Router Advertisement
	// code, checksum, cur hop limit (0: unspecified), flags, router
	// lifetime (0: not a default router), reachable time and retrans
	// timer (0: unspecified) are all zero.
	return ra
}

// advertiseSelf sends routerAdvert to all nodes on iface now and every
// selfAdvertInterval until ctx ends, from the link's link-local address.
// It needs CAP_NET_RAW (a raw ICMPv6 socket): without it, it says once
// that such a router will not find this speaker, and returns.
func advertiseSelf(ctx context.Context, logger logr.Logger, iface string) {
	t := time.NewTicker(selfAdvertInterval)
	defer t.Stop()
	failed := false
	for {
		err := sendRouterAdvert(iface)
		switch {
		case err != nil && !failed:
			logger.Info("Cannot announce this speaker on the peer's link: a router that learns its neighbours from Router Advertisements (FRR's neighbor IFACE interface) will not accept the session; give this process CAP_NET_RAW, or configure the router to take the session without them (docs/leaf-spine.md, Unnumbered)",
				"interface", iface, "err", err)
			failed = true
		case err == nil && failed:
			logger.Info("Announcing this speaker on the peer's link again", "interface", iface)
			failed = false
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sendRouterAdvert sends one routerAdvert to ff02::1 on iface, with the
// hop limit of 255 a receiver requires (RFC 4861 6.1.2).
func sendRouterAdvert(iface string) error {
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return fmt.Errorf("interface %s: %w", iface, err)
	}
	fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_ICMPV6)
	if err != nil {
		return fmt.Errorf("raw ICMPv6 socket: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_MULTICAST_HOPS, 255); err != nil {
		return fmt.Errorf("hop limit: %w", err)
	}
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_MULTICAST_IF, ifi.Index); err != nil {
		return fmt.Errorf("interface %s: %w", iface, err)
	}
	to := &unix.SockaddrInet6{ZoneId: uint32(ifi.Index), Addr: [16]byte{0: 0xff, 1: 0x02, 15: 1}} //nolint:gosec // an interface index is positive and small
	if err := unix.Sendto(fd, routerAdvert(), 0, to); err != nil {
		return fmt.Errorf("router advertisement on %s: %w", iface, err)
	}
	return nil
}
