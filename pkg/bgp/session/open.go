package session

import (
	"fmt"
	"time"

	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// openMessage is the speaker's OPEN: its families, route refresh, 4-octet
// AS numbers, and what Config offers of ADD-PATH (send only: the speaker
// accepts no routes), extended next hops and graceful restart.
func openMessage(c *Config) (*bgp.BGPMessage, error) {
	caps := []bgp.ParameterCapabilityInterface{}
	for _, f := range c.Families {
		caps = append(caps, bgp.NewCapMultiProtocol(f))
	}
	caps = append(caps, bgp.NewCapRouteRefresh(), bgp.NewCapFourOctetASNumber(c.LocalASN))
	if c.GracefulRestart {
		var tuples []*bgp.CapGracefulRestartTuple
		for _, f := range c.Families {
			tuples = append(tuples, bgp.NewCapGracefulRestartTuple(f, true))
		}
		// Restarting, and forwarding kept for every family: every start
		// counts as a restart, since the speaker cannot tell.
		caps = append(caps, bgp.NewCapGracefulRestart(true, false, uint16(c.RestartTime/time.Second), tuples)) //nolint:gosec // validate: at most 4095
	}
	if c.AddPathSend {
		var tuples []*bgp.CapAddPathTuple
		for _, f := range c.Families {
			tuples = append(tuples, bgp.NewCapAddPathTuple(f, bgp.BGP_ADD_PATH_SEND))
		}
		caps = append(caps, bgp.NewCapAddPath(tuples))
	}
	if c.ExtendedNextHop && hasFamily(c.Families, bgp.RF_IPv4_UC) {
		caps = append(caps, bgp.NewCapExtendedNexthop([]*bgp.CapExtendedNexthopTuple{
			bgp.NewCapExtendedNexthopTuple(bgp.RF_IPv4_UC, bgp.AFI_IP6),
		}))
	}
	myAS := uint16(bgp.AS_TRANS)
	if c.LocalASN <= 0xffff {
		myAS = uint16(c.LocalASN)
	}
	return bgp.NewBGPOpenMessage(myAS, uint16(c.HoldTime/time.Second), c.RouterID, //nolint:gosec // validate: at most 65535 s
		[]bgp.OptionParameterInterface{bgp.NewOptionParameterCapability(caps)})
}

// openError is a refused OPEN: the NOTIFICATION's subcode, and why.
type openError struct {
	subcode uint8
	why     string
}

func (e *openError) Error() string { return e.why }

// negotiate checks the router's OPEN against c and returns what the
// session has; an error is an *openError.
func negotiate(c *Config, open *bgp.BGPOpen) (Negotiated, error) {
	if open.Version != 4 {
		return Negotiated{}, &openError{bgp.BGP_ERROR_SUB_UNSUPPORTED_VERSION_NUMBER, fmt.Sprintf("BGP version %d", open.Version)}
	}
	n := Negotiated{RouterID: open.ID, AddPath: map[bgp.Family]bool{}}
	peerAS := uint32(open.MyAS)
	var offered []bgp.Family
	addPathRx := map[bgp.Family]bool{}
	extNH := false
	for _, p := range open.OptParams {
		pc, ok := p.(*bgp.OptionParameterCapability)
		if !ok {
			continue
		}
		for _, cp := range pc.Capability {
			switch v := cp.(type) {
			case *bgp.CapMultiProtocol:
				offered = append(offered, v.CapValue)
			case *bgp.CapFourOctetASNumber:
				n.FourOctetAS, peerAS = true, v.CapValue
			case *bgp.CapAddPath:
				for _, t := range v.Tuples {
					if t.Mode&bgp.BGP_ADD_PATH_RECEIVE != 0 {
						addPathRx[t.Family] = true
					}
				}
			case *bgp.CapExtendedNexthop:
				for _, t := range v.Tuples {
					if t.NLRIAFI == bgp.AFI_IP && t.NLRISAFI == bgp.SAFI_UNICAST && t.NexthopAFI == bgp.AFI_IP6 {
						extNH = true
					}
				}
			case *bgp.CapGracefulRestart:
				n.GracefulRestart = true
			}
		}
	}
	if peerAS != c.PeerASN {
		return Negotiated{}, &openError{bgp.BGP_ERROR_SUB_BAD_PEER_AS, fmt.Sprintf("router's AS %d, configured %d", peerAS, c.PeerASN)}
	}
	if !open.ID.Is4() || open.ID.IsUnspecified() || (open.ID == c.RouterID && c.LocalASN == c.PeerASN) {
		return Negotiated{}, &openError{bgp.BGP_ERROR_SUB_BAD_BGP_IDENTIFIER, fmt.Sprintf("router ID %s", open.ID)}
	}
	hold := time.Duration(open.HoldTime) * time.Second
	if hold > 0 && hold < 3*time.Second {
		return Negotiated{}, &openError{bgp.BGP_ERROR_SUB_UNACCEPTABLE_HOLD_TIME, fmt.Sprintf("hold time %s", hold)}
	}
	n.HoldTime = min(hold, c.HoldTime)
	if len(offered) == 0 {
		// Without multiprotocol capabilities, a router speaks IPv4
		// unicast only (RFC 4760).
		offered = []bgp.Family{bgp.RF_IPv4_UC}
	}
	for _, f := range c.Families {
		if hasFamily(offered, f) {
			n.Families = append(n.Families, f)
			n.AddPath[f] = c.AddPathSend && addPathRx[f]
		}
	}
	if len(n.Families) == 0 {
		return Negotiated{}, &openError{bgp.BGP_ERROR_SUB_UNSUPPORTED_CAPABILITY, fmt.Sprintf("no common family (router offered %v)", offered)}
	}
	n.ExtendedNextHop = c.ExtendedNextHop && extNH
	return n, nil
}

func hasFamily(fs []bgp.Family, f bgp.Family) bool {
	for _, g := range fs {
		if g == f {
			return true
		}
	}
	return false
}
