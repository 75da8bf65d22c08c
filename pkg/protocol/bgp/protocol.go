// Package bgp is the BGP announcement protocol (pkg/protocol): the
// replicas' speaker with the nodes as ADD-PATH next hops (announceFrom
// Replicas), or each node agent's speaker for its own node (announceFrom
// Nodes), built from the config's bgp section with the speaker of pkg/bgp.
package bgp

import (
	"net/netip"

	"k8s.io/component-base/metrics"

	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/protocol"
	"github.com/metal-ccm/metal-ccm/pkg/svcstatus"
)

func init() { protocol.Register(Protocol{}) }

// Protocol is BGP.
type Protocol struct{}

var _ protocol.Protocol = Protocol{}

// Name is "BGP".
func (Protocol) Name() config.Protocol { return config.ProtocolBGP }

// Unknown: without BGP peers at start, nothing announces the address over
// BGP, and that is the whole truth.
func (Protocol) Unknown(addr netip.Addr) (svcstatus.Announcement, bool) {
	return svcstatus.Announcement{Addr: addr, Protocol: svcstatus.BGP}, true
}

// ReplicaMetrics are the replicas' sessions and prefixes.
func (Protocol) ReplicaMetrics() []*metrics.Desc {
	return []*metrics.Desc{descReplicaSession, descReplicaBFD, descReplicaPrefixes}
}

// AgentMetrics are the node agents' sessions and prefixes.
func (Protocol) AgentMetrics() []*metrics.Desc {
	return []*metrics.Desc{descAgentSession, descAgentBFD, descAgentPrefixes}
}

// OutputAnnotations: the summary annotation (pkg/svcstatus) says all.
func (Protocol) OutputAnnotations() []string { return nil }
