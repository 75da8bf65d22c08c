package session

import (
	"fmt"
	"slices"
	"time"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/wire"
)

// openMessage is the speaker's OPEN: its families, route refresh, 4-octet
// AS numbers, and what Config offers of ADD-PATH (send only: the speaker
// accepts no routes), extended next hops and graceful restart.
func openMessage(c *Config) *wire.Open {
	m := &wire.Open{ASN: c.LocalASN, HoldTime: uint16(c.HoldTime / time.Second), ID: c.RouterID, //nolint:gosec // validate: at most 65535 s
		Capabilities: wire.Capabilities{Families: c.Families, RouteRefresh: true, FourOctetAS: true}}
	if c.GracefulRestart {
		// Restarting, and forwarding kept for every family: every start
		// counts as a restart, since the speaker cannot tell.
		gr := &wire.GracefulRestart{Restarting: true, Time: uint16(c.RestartTime / time.Second)} //nolint:gosec // validate: at most 4095
		for _, f := range c.Families {
			gr.Families = append(gr.Families, wire.GracefulRestartFamily{Family: f, Forwarding: true})
		}
		m.GracefulRestart = gr
	}
	if c.AddPathSend {
		for _, f := range c.Families {
			m.AddPath = append(m.AddPath, wire.AddPath{Family: f, Mode: wire.AddPathSend})
		}
	}
	if c.ExtendedNextHop && slices.Contains(c.Families, wire.IPv4Unicast) {
		m.ExtendedNextHop = []wire.ExtendedNextHop{{Family: wire.IPv4Unicast, NextHopAFI: wire.AFIIPv6}}
	}
	return m
}

// openError is a refused OPEN: the NOTIFICATION's subcode, and why.
type openError struct {
	subcode uint8
	why     string
}

func (e *openError) Error() string { return e.why }

// OPEN message error subcodes (RFC 4271 6.2, RFC 5492).
const (
	subBadPeerAS         = 2
	subBadIdentifier     = 3
	subUnacceptableHold  = 6
	subUnsupportedCapabs = 7
)

// negotiate checks the router's OPEN against c and the speaker's own
// OPEN, and returns what the session has; an error is an *openError.
func negotiate(c *Config, local, peer *wire.Open) (Negotiated, error) {
	if peer.ASN != c.PeerASN {
		return Negotiated{}, &openError{subBadPeerAS, fmt.Sprintf("router's AS %d, configured %d", peer.ASN, c.PeerASN)}
	}
	if peer.ID == c.RouterID && c.LocalASN == c.PeerASN {
		return Negotiated{}, &openError{subBadIdentifier, fmt.Sprintf("router ID %s is the speaker's", peer.ID)}
	}
	if peer.HoldTime > 0 && peer.HoldTime < 3 {
		return Negotiated{}, &openError{subUnacceptableHold, fmt.Sprintf("hold time %ds", peer.HoldTime)}
	}
	w := wire.Negotiate(local, peer)
	n := Negotiated{HoldTime: time.Duration(w.HoldTime) * time.Second, FourOctetAS: w.FourOctetAS, Families: w.Families,
		AddPath: map[wire.Family]bool{}, ExtendedNextHop: w.IPv6NextHopFor(wire.IPv4Unicast),
		GracefulRestart: w.PeerGracefulRestart != nil, RouterID: peer.ID}
	for _, f := range w.Families {
		n.AddPath[f] = w.SendsAddPath(f)
	}
	if len(n.Families) == 0 {
		return Negotiated{}, &openError{subUnsupportedCapabs, fmt.Sprintf("no common family (router offered %v)", peer.Families)}
	}
	return n, nil
}
