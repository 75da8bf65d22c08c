package bgp

import (
	"k8s.io/component-base/metrics"

	speaker "github.com/metal-ccm/metal-ccm/pkg/bgp"
)

// A speaker's sessions and prefixes, declared here once for the replicas
// and the node agents, each under its own names.
var (
	descReplicaSession = metrics.NewDesc("metal_ccm_bgp_session_up",
		"1 when the BGP session to a peer is established, else 0. Reported by every replica.",
		[]string{"peer", "state"}, nil, metrics.ALPHA, "")
	descReplicaPrefixes = metrics.NewDesc("metal_ccm_bgp_announced_prefixes",
		"Prefixes this replica announces. Reported by every replica.",
		nil, nil, metrics.ALPHA, "")
	descAgentSession = metrics.NewDesc("metal_ccm_agent_bgp_session_up",
		"1 when the node agent's BGP session to a peer is established, else 0.",
		[]string{"peer", "state"}, nil, metrics.ALPHA, "")
	descReplicaBFD = metrics.NewDesc("metal_ccm_bgp_bfd_session_up",
		"1 when the BFD session to a peer with BFD is up, else 0. Reported by every replica.",
		[]string{"peer"}, nil, metrics.ALPHA, "")
	descAgentBFD = metrics.NewDesc("metal_ccm_agent_bgp_bfd_session_up",
		"1 when the node agent's BFD session to a peer with BFD is up, else 0.",
		[]string{"peer"}, nil, metrics.ALPHA, "")
	descAgentPrefixes = metrics.NewDesc("metal_ccm_agent_bgp_announced_prefixes",
		"Prefixes the node agent announces.", nil, nil, metrics.ALPHA, "")
)

// bfdUp is PeerState.BFD of a BFD session that is up.
const bfdUp = "up"

// session is one session as the metrics show it.
type session struct {
	up          float64 // 1 when established
	peer, state string
	bfd         bool    // the peer has BFD
	bfdUp       float64 // 1 when its BFD session is up
}

// sessions are sp's sessions for the metrics.
func sessions(sp *speaker.Speaker) []session {
	states := sp.PeerStates()
	out := make([]session, 0, len(states))
	for _, p := range states {
		s := session{peer: p.Where(), state: p.State}
		if p.Established() {
			s.up = 1
		}
		if p.BFD != "" {
			s.bfd = true
			if p.BFD == bfdUp {
				s.bfdUp = 1
			}
		}
		out = append(out, s)
	}
	return out
}

// collectReplica sends a replica speaker's sessions and prefixes.
func collectReplica(sp *speaker.Speaker, ch chan<- metrics.Metric) {
	for _, s := range sessions(sp) {
		ch <- metrics.NewLazyConstMetric(descReplicaSession, metrics.GaugeValue, s.up, s.peer, s.state)
		if s.bfd {
			ch <- metrics.NewLazyConstMetric(descReplicaBFD, metrics.GaugeValue, s.bfdUp, s.peer)
		}
	}
	ch <- metrics.NewLazyConstMetric(descReplicaPrefixes, metrics.GaugeValue, float64(sp.PrefixCount()))
}

// collectAgent sends a node agent speaker's sessions and prefixes.
func collectAgent(sp *speaker.Speaker, ch chan<- metrics.Metric) {
	for _, s := range sessions(sp) {
		ch <- metrics.NewLazyConstMetric(descAgentSession, metrics.GaugeValue, s.up, s.peer, s.state)
		if s.bfd {
			ch <- metrics.NewLazyConstMetric(descAgentBFD, metrics.GaugeValue, s.bfdUp, s.peer)
		}
	}
	ch <- metrics.NewLazyConstMetric(descAgentPrefixes, metrics.GaugeValue, float64(sp.PrefixCount()))
}
