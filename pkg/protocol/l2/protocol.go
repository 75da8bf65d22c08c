// Package l2 is the L2 announcement protocol (pkg/protocol): for the pools
// announced with L2, one node agent answers ARP and Neighbor Solicitations
// for each address (pkg/l2), chosen by the rule every agent applies to its
// view of the membership (pkg/l2/elect); the replicas observe the same
// membership to show, on each Service, which node answers.
package l2

import (
	"net/netip"

	"k8s.io/component-base/metrics"

	"github.com/metal-ccm/metal-ccm/pkg/annotation"
	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/protocol"
	"github.com/metal-ccm/metal-ccm/pkg/svcstatus"
)

func init() { protocol.Register(Protocol{}) }

// Protocol is L2.
type Protocol struct{}

var _ protocol.Protocol = Protocol{}

// Name is "L2".
func (Protocol) Name() config.Protocol { return config.ProtocolL2 }

// Unknown: without L2 pools at start no observer runs, so which node
// answers is not known.
func (Protocol) Unknown(addr netip.Addr) (svcstatus.Announcement, bool) {
	return svcstatus.Announcement{Addr: addr, Protocol: svcstatus.L2}, false
}

// ReplicaMetrics: the addresses in conflict, as the observer sees them.
func (Protocol) ReplicaMetrics() []*metrics.Desc { return []*metrics.Desc{descConflicts} }

// AgentMetrics are the agent's answered addresses, takeovers and view.
func (Protocol) AgentMetrics() []*metrics.Desc {
	return []*metrics.Desc{descAnswering, descTakeovers, descMembers, descMajority, descIgnored, descForwards, descAgentConflicts}
}

// OutputAnnotations: which node answers for each L2 address.
func (Protocol) OutputAnnotations() []string { return []string{annotation.L2Nodes} }
