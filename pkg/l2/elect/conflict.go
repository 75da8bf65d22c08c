package elect

import (
	"net"
	"net/netip"

	"github.com/metal-ccm/metal-ccm/pkg/l2/member"
)

// Conflict is an address a bound member reports in use by a host outside
// the cluster: it has no owner while any bound member reports it, since
// any node that took it over would answer beside that host and find the
// conflict again.
type Conflict struct {
	// MAC is the foreign host's, as the first reporter (by name) saw it;
	// nil when unknown.
	MAC net.HardwareAddr
	// Nodes are the members that report it, in name order.
	Nodes []string
}

// conflicts are the addresses the bound members report in conflict.
func conflicts(bound []member.Member) map[netip.Addr]Conflict {
	out := map[netip.Addr]Conflict{}
	for _, m := range bound { // in name order (member.Members.Alive)
		for _, c := range m.Fitness.Conflicts {
			a := c.Addr.Unmap()
			cur, seen := out[a]
			if !seen {
				cur.MAC = c.MAC
			}
			cur.Nodes = append(cur.Nodes, m.Name)
			out[a] = cur
		}
	}
	return out
}

// MACs are the hardware addresses the bound members say their answering
// interfaces have: a claim for an address from one of them is the
// cluster's own (two owners for a moment during a takeover), not a
// conflict.
func MACs(bound []member.Member) []net.HardwareAddr {
	var out []net.HardwareAddr
	for _, m := range bound {
		out = append(out, m.Fitness.MACs...)
	}
	return out
}
