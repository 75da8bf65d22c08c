package bgp

import (
	speaker "github.com/metal-ccm/metal-ccm/pkg/bgp"
	"github.com/metal-ccm/metal-ccm/pkg/protocol"
	published "github.com/metal-ccm/metal-ccm/pkg/sessions"
)

var (
	_ protocol.Sessions = (*replica)(nil)
	_ protocol.Sessions = (*agent)(nil)
)

// Sessions are the replica speaker's sessions; nil with announceFrom Nodes.
func (r *replica) Sessions() []published.Peer { return peers(r.speaker) }

// Sessions are the node agent speaker's sessions.
func (a *agent) Sessions() []published.Peer { return peers(a.speaker) }

// peers are sp's sessions as published (PeerStates, as the metrics read
// them).
func peers(sp *speaker.Speaker) []published.Peer {
	if sp == nil {
		return nil
	}
	states := sp.PeerStates()
	out := make([]published.Peer, 0, len(states))
	for _, p := range states {
		out = append(out, published.Peer{Protocol: "BGP", Name: p.Name, Address: p.Where(), State: p.State, Up: p.Established(), BFD: p.BFD})
	}
	return out
}
