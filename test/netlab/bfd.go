package netlab

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
)

// BFDStates maps each BFD peer address of router namespace ns to its
// session's state in lower case ("up", "down", "init"): BIRD's `show bfd
// sessions`, FRR's `show bfd peers json`.
func (ls *LeafSpine) BFDStates(ns string) (map[netip.Addr]string, error) {
	rt, err := ls.router(ns)
	if err != nil {
		return nil, err
	}
	return rt.BFDStates()
}

// BFDStates maps each BFD peer address of the router to its session's
// state, as LeafSpine.BFDStates.
func (n *routerNS) BFDStates() (map[netip.Addr]string, error) {
	if n.kind == RouterFRR {
		out, err := n.Vtysh("show bfd peers json")
		if err != nil {
			return nil, err
		}
		return parseFRRBFDPeers([]byte(out))
	}
	out, err := n.Birdc("show", "bfd", "sessions")
	if err != nil {
		return nil, err
	}
	return parseBIRDBFDSessions(out), nil
}

// parseFRRBFDPeers reads `show bfd peers json`: a list of peers, each with
// its address and status.
func parseFRRBFDPeers(data []byte) (map[netip.Addr]string, error) {
	var peers []struct {
		Peer   string `json:"peer"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal(data, &peers); err != nil {
		return nil, fmt.Errorf("netlab parse FRR BFD peers: %w", err)
	}
	out := map[netip.Addr]string{}
	for _, p := range peers {
		if a, err := netip.ParseAddr(p.Peer); err == nil {
			out[a] = strings.ToLower(p.Status)
		}
	}
	return out, nil
}

// parseBIRDBFDSessions reads `show bfd sessions`: a line per session,
// its address first and its state third.
func parseBIRDBFDSessions(text string) map[netip.Addr]string {
	out := map[netip.Addr]string{}
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		if a, err := netip.ParseAddr(f[0]); err == nil {
			out[a] = strings.ToLower(f[2])
		}
	}
	return out
}

// WaitBFDUp polls until router namespace ns has BFD sessions up with all
// the given peer addresses.
func (ls *LeafSpine) WaitBFDUp(ctx context.Context, ns string, addrs ...netip.Addr) error {
	rt, err := ls.router(ns)
	if err != nil {
		return err
	}
	return rt.WaitBFDUp(ctx, addrs...)
}

// WaitBFDUp polls until the router has BFD sessions up with all the given
// peer addresses.
func (n *routerNS) WaitBFDUp(ctx context.Context, addrs ...netip.Addr) error {
	return poll(ctx, func() (bool, string) {
		states, err := n.BFDStates()
		if err != nil {
			return false, err.Error()
		}
		for _, a := range addrs {
			if states[a] != "up" {
				return false, fmt.Sprintf("%s: BFD sessions %v", n.ns, states)
			}
		}
		return true, ""
	})
}
