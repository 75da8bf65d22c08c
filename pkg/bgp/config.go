// Package bgp is the embedded BGP speaker, announcing host routes (/32,
// /128) with third-party next hops — one path per next hop, sent with
// ADD-PATH, so that the router installs an ECMP route over the nodes. It
// keeps every path once, whatever the number of peers: each peer's session
// (pkg/bgp/session, on the wire codec of pkg/bgp/wire) is sent from that
// one store, and keeps only which path identifiers its router has. The
// speaker only dials out (it never listens), so it needs no privileges.
package bgp

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/limits"
)

// Peer is a router the speaker opens a session to.
type Peer struct {
	// Name names the peer in the policy's advertisements (unique).
	Name string
	// Address is the router's address; the session carries the unicast
	// family of this address only. With Interface it is the router's
	// link-local address on that link, if known (zero: found there, see
	// Interface).
	Address netip.Addr
	// Interface, when set, makes the session a link-local one over this
	// link (BGP unnumbered): the router is its link-local neighbour
	// (Address, else the gateway the kernel learned from the router's
	// Router Advertisements, else the one neighbour entry flagged as a
	// router), and the session carries IPv4 and IPv6 unicast, IPv4 with
	// IPv6 next hops (extended next hop, RFC 8950). Without Address, the
	// peer moves to the link's router when that has another address while
	// the session is not established (followRouter).
	Interface string
	// NextHopSelf sends every path with the session's own address as next
	// hop instead of the one given (a node agent on a link-local session:
	// its link-local address, which the router reaches on the link).
	NextHopSelf bool
	// ASN is the router's AS number.
	ASN uint32
	// Port is the router's BGP port; 0 means 179.
	Port uint16
	// HoldTime is the proposed hold time; 0 means 90s. Keepalives are sent
	// every third of it.
	HoldTime time.Duration
	// Password enables TCP MD5 signatures; "" means none. It is never logged.
	Password string
	// GracefulRestart announces the graceful-restart capability, so that the
	// router keeps the speaker's routes while the speaker restarts.
	GracefulRestart bool
	// RestartTime is the announced restart time; 0 means 120s.
	RestartTime time.Duration
	// LocalAddress is the source address of the session, if set; it must
	// be of Address's family.
	LocalAddress netip.Addr
	// Deny keeps every prefix inside one of these from this peer (for
	// example the cluster's pod CIDRs, for a router that must not get pod
	// routes).
	Deny []netip.Prefix
	// MultihopTTL, when not 0, allows an eBGP router that is not directly
	// connected: the session's packets get this TTL.
	MultihopTTL uint8
	// TTLSecurity (GTSM, RFC 5082): the session's packets leave with TTL
	// 255, and only those that arrive with at least 255 less the hops
	// (MultihopTTL, else 1) plus one are taken.
	TTLSecurity bool
	// BFD, when set, runs a BFD session with the router beside the BGP
	// session (single hop, or multihop with MultihopTTL; on an Interface,
	// single hop between the link-local addresses, once the router is
	// found); the BGP session is reset when BFD sees the path fail.
	BFD *BFD
}

// BFD is a peer's BFD profile; a zero field takes its default.
type BFD struct {
	// ReceiveInterval is the least interval between the router's packets
	// the speaker wants; 0 means 300ms.
	ReceiveInterval time.Duration
	// TransmitInterval is the least interval between the speaker's own
	// packets; 0 means 300ms.
	TransmitInterval time.Duration
	// Multiplier is how many intervals without a packet make the session
	// fail; 0 means 3.
	Multiplier uint8
}

// withDefaults checks b and fills in its zero fields.
func (b BFD) withDefaults() (BFD, error) {
	var errs []error
	for _, iv := range []struct {
		name string
		d    *time.Duration
	}{{"receiveInterval", &b.ReceiveInterval}, {"transmitInterval", &b.TransmitInterval}} {
		if *iv.d == 0 {
			*iv.d = limits.DefaultBFDInterval
		} else if *iv.d < limits.MinBFDInterval || *iv.d > limits.MaxBFDInterval {
			errs = append(errs, fmt.Errorf("bfd.%s %s must be 0 (default) or between %s and %s", iv.name, *iv.d, limits.MinBFDInterval, limits.MaxBFDInterval))
		}
	}
	if b.Multiplier == 0 {
		b.Multiplier = limits.DefaultBFDMultiplier
	} else if b.Multiplier < limits.MinBFDMultiplier {
		errs = append(errs, fmt.Errorf("bfd.multiplier %d must be 0 (default) or at least %d", b.Multiplier, limits.MinBFDMultiplier))
	}
	return b, errors.Join(errs...)
}

// carries reports whether the peer is sent prefix: one of its own family,
// and inside none of its Deny prefixes.
func (p Peer) carries(prefix netip.Prefix) bool {
	if p.Interface == "" && p.Address.Is4() != prefix.Addr().Is4() {
		return false
	}
	for _, d := range p.Deny {
		if d.Contains(prefix.Addr()) && d.Bits() <= prefix.Bits() {
			return false
		}
	}
	return true
}

// Config configures a Speaker.
type Config struct {
	// ASN is the speaker's AS number.
	ASN uint32
	// RouterID is the speaker's BGP identifier, an IPv4 address; required.
	RouterID netip.Addr
	// Peers are the routers to peer with.
	Peers []Peer
	// Policy says which peers get each host prefix, with which attributes,
	// and which aggregates they get; nil: every peer gets every prefix of
	// its family, without attributes.
	Policy Policy
}

// Validate reports every problem of cfg that would keep a Speaker from
// starting with it.
func (cfg Config) Validate() error {
	_, err := cfg.validate()
	return err
}

// validate checks cfg and returns a copy with defaults filled in.
func (cfg Config) validate() (Config, error) {
	var errs []error
	if cfg.ASN == 0 {
		errs = append(errs, errors.New("asn must not be 0"))
	}
	if !cfg.RouterID.Is4() || cfg.RouterID.IsUnspecified() {
		errs = append(errs, fmt.Errorf("routerID %q must be a non-zero IPv4 address", cfg.RouterID))
	}
	out := cfg
	out.Peers = make([]Peer, len(cfg.Peers))
	seen := map[string]bool{}
	for i, p := range cfg.Peers {
		p, err := p.withDefaults()
		if err != nil {
			errs = append(errs, fmt.Errorf("peers[%d]: %w", i, err))
			continue
		}
		if k := p.key(); seen[k] {
			errs = append(errs, fmt.Errorf("peers[%d]: duplicate %s", i, k))
		} else {
			seen[k] = true
		}
		out.Peers[i] = p
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, fmt.Errorf("invalid BGP config: %w", err)
	}
	return out, nil
}

// key tells peers apart: one session per address, or per link.
func (p Peer) key() string {
	if p.Interface != "" {
		return "interface " + p.Interface
	}
	return "address " + p.Address.String()
}

// linkLocalProblems are what keeps p, a peer on an interface, from a
// link-local session.
func (p Peer) linkLocalProblems() []error {
	var errs []error
	if a := p.Address; a.IsValid() && (!a.Is6() || !a.IsLinkLocalUnicast() || a.Zone() != "") {
		errs = append(errs, fmt.Errorf("address %s of a peer on interface %s must be an IPv6 link-local address without a zone", a, p.Interface))
	}
	if p.LocalAddress.IsValid() {
		errs = append(errs, fmt.Errorf("localAddress %s: a peer on an interface uses its link-local address", p.LocalAddress))
	}
	if p.MultihopTTL > 0 {
		errs = append(errs, errors.New("multihopTTL: a link-local router is one hop away"))
	}
	return errs
}

// withDefaults checks p and fills in its zero fields.
func (p Peer) withDefaults() (Peer, error) {
	var errs []error
	switch {
	case p.Interface != "":
		errs = append(errs, p.linkLocalProblems()...)
	case !p.Address.IsValid() || p.Address.IsUnspecified() || p.Address.IsMulticast():
		errs = append(errs, fmt.Errorf("address %q must be a unicast IP address", p.Address))
	case p.Address.Zone() != "":
		errs = append(errs, fmt.Errorf("address %s must not have a zone", p.Address))
	case p.Address.Is4In6():
		errs = append(errs, fmt.Errorf("address %s must be IPv4 or IPv6, not IPv4-mapped", p.Address))
	}
	if p.ASN == 0 {
		errs = append(errs, errors.New("asn must not be 0"))
	}
	if p.HoldTime != 0 && (p.HoldTime < limits.MinHoldTime || p.HoldTime > limits.MaxHoldTime) {
		errs = append(errs, fmt.Errorf("holdTime %s must be 0 (default) or between %s and %s", p.HoldTime, limits.MinHoldTime, limits.MaxHoldTime))
	}
	if p.RestartTime != 0 && (p.RestartTime < limits.MinRestartTime || p.RestartTime > limits.MaxRestartTime) {
		errs = append(errs, fmt.Errorf("restartTime %s must be 0 (default) or between %s and %s", p.RestartTime, limits.MinRestartTime, limits.MaxRestartTime))
	}
	if l := p.LocalAddress; p.Interface == "" && l.IsValid() && (l.Is4() != p.Address.Is4() || l.IsUnspecified() || l.IsMulticast() || l.Zone() != "" || l.Is4In6()) {
		errs = append(errs, fmt.Errorf("localAddress %s must be a unicast address of the peer address's family", p.LocalAddress))
	}
	if p.BFD != nil {
		b, err := p.BFD.withDefaults()
		if err != nil {
			errs = append(errs, err)
		}
		p.BFD = &b
	}
	if err := errors.Join(errs...); err != nil {
		return Peer{}, err
	}
	if p.Port == 0 {
		p.Port = limits.DefaultPort
	}
	if p.HoldTime == 0 {
		p.HoldTime = limits.DefaultHoldTime
	}
	if p.RestartTime == 0 {
		p.RestartTime = limits.DefaultRestartTime
	}
	return p, nil
}
