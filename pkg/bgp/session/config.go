package session

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/wire"
)

// DefaultPort is BGP's TCP port.
const DefaultPort = 179

// Config is one session's settings.
type Config struct {
	// LocalASN and PeerASN are the speaker's and the router's AS numbers:
	// equal for iBGP.
	LocalASN, PeerASN uint32
	// RouterID is the speaker's BGP identifier (IPv4).
	RouterID netip.Addr
	// Neighbor is the router's address; a link-local one carries its zone
	// (the interface).
	Neighbor netip.Addr
	// Port is the router's port; 0 is DefaultPort.
	Port uint16
	// LocalAddress is the session's source address; zero: the kernel's
	// choice.
	LocalAddress netip.Addr
	// HoldTime is the hold time proposed; the session's is the lower of
	// both sides' (0 on either: none, and no keepalives).
	HoldTime time.Duration
	// Password, when set, signs every segment (TCP MD5, RFC 2385).
	Password string
	// MultihopTTL, when not 0, is the TTL of an eBGP session's packets
	// (a router that many hops away); eBGP is otherwise sent with TTL 1.
	MultihopTTL uint8
	// TTLSecurity (GTSM, RFC 5082) sends with TTL 255 and takes only the
	// packets that arrive with at least 256 less the hops (MultihopTTL,
	// else 1).
	TTLSecurity bool
	// Families are the unicast families offered: wire.IPv4Unicast and
	// wire.IPv6Unicast.
	Families []wire.Family
	// ExtendedNextHop offers IPv4 unicast with IPv6 next hops (RFC 8950),
	// which a session between link-local addresses needs for IPv4.
	ExtendedNextHop bool
	// AddPathSend offers to send several paths per prefix (ADD-PATH, RFC
	// 7911) in every family.
	AddPathSend bool
	// GracefulRestart offers graceful restart (RFC 4724) with RestartTime
	// (at most 4095 s), as a speaker that restarted and kept forwarding:
	// a router that kept the routes of the previous session keeps them
	// until this session's End-of-RIB.
	GracefulRestart bool
	RestartTime     time.Duration
}

// Errors of a session's setup, which callers tell apart.
var (
	// ErrConfig is an invalid Config.
	ErrConfig = errors.New("invalid session config")
	// ErrOpen is an OPEN the speaker refuses (it sent a NOTIFICATION).
	ErrOpen = errors.New("router's OPEN refused")
	// ErrNotification is a NOTIFICATION from the router.
	ErrNotification = errors.New("NOTIFICATION from the router")
	// ErrHoldTimer is the hold timer's expiry: nothing came from the
	// router for the hold time.
	ErrHoldTimer = errors.New("hold timer expired")
)

func (c *Config) validate() error {
	var errs []error
	if c.LocalASN == 0 || c.PeerASN == 0 {
		errs = append(errs, errors.New("AS numbers must not be 0"))
	}
	if !c.RouterID.Is4() {
		errs = append(errs, fmt.Errorf("router ID %s must be an IPv4 address", c.RouterID))
	}
	if !c.Neighbor.IsValid() {
		errs = append(errs, errors.New("no neighbor address"))
	}
	if c.LocalAddress.IsValid() && c.LocalAddress.Is4() != c.Neighbor.Is4() {
		errs = append(errs, fmt.Errorf("local address %s and neighbor %s are of different families", c.LocalAddress, c.Neighbor))
	}
	if h := c.HoldTime; h != 0 && (h < 3*time.Second || h > 65535*time.Second) {
		errs = append(errs, fmt.Errorf("hold time %s: 0, or 3s to 65535s", h))
	}
	if len(c.Password) > 80 {
		errs = append(errs, errors.New("password longer than 80 bytes"))
	}
	if c.RestartTime > 4095*time.Second {
		errs = append(errs, fmt.Errorf("restart time %s: at most 4095s", c.RestartTime))
	}
	if len(c.Families) == 0 {
		errs = append(errs, errors.New("no family"))
	}
	for _, f := range c.Families {
		if f != wire.IPv4Unicast && f != wire.IPv6Unicast {
			errs = append(errs, fmt.Errorf("family %s: only IPv4 and IPv6 unicast", f))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}

// Negotiated is what both sides' OPENs agreed on.
type Negotiated struct {
	// HoldTime is the session's hold time; 0: none.
	HoldTime time.Duration
	// FourOctetAS: both sides have 4-octet AS numbers.
	FourOctetAS bool
	// Families are the families both offered.
	Families []wire.Family
	// AddPath are the families the speaker sends several paths of.
	AddPath map[wire.Family]bool
	// ExtendedNextHop: IPv4 unicast may carry IPv6 next hops.
	ExtendedNextHop bool
	// GracefulRestart: the router offered graceful restart (it keeps the
	// speaker's routes when the session ends without a NOTIFICATION).
	GracefulRestart bool
	// RouterID is the router's BGP identifier.
	RouterID netip.Addr
}

// Options are the encoding options of family f on the session.
func (n Negotiated) Options(f wire.Family) wire.Options {
	return wire.Options{FourOctetAS: n.FourOctetAS, AddPath: n.AddPath[f]}
}

// Has reports whether the session carries family f.
func (n Negotiated) Has(f wire.Family) bool {
	for _, g := range n.Families {
		if g == f {
			return true
		}
	}
	return false
}
