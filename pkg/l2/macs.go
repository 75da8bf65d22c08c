package l2

import (
	"bytes"
	"net"
	"net/netip"
	"slices"
)

// ReachMACs are the MACs of the interfaces that Reach looks at: with names
// (Options.Interfaces) the named Ethernet interfaces; without, the up,
// non-loopback Ethernet interfaces with an on-link prefix that keep returns
// true for. Sorted, at most most of them. The agents gossip them, so that a
// claim for an address from another node of the cluster is told from a
// foreign host's (Options.Peer).
func ReachMACs(names []string, keep func(netip.Prefix) bool, most int) ([]net.HardwareAddr, error) {
	ifaces, err := listInterfaces()
	if err != nil {
		return nil, err
	}
	return reachMACsOf(ifaces, names, keep, most), nil
}

func reachMACsOf(ifaces []iface, names []string, keep func(netip.Prefix) bool, most int) []net.HardwareAddr {
	var out []net.HardwareAddr
	for _, ifc := range ifaces {
		if !ifc.ethernet() {
			continue
		}
		switch {
		case len(names) > 0:
			if !slices.Contains(names, ifc.Name) {
				continue
			}
		case ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 ||
			!slices.ContainsFunc(ifc.Prefixes, func(p netip.Prefix) bool { return keep(p.Masked()) }):
			continue
		}
		if !slices.ContainsFunc(out, func(m net.HardwareAddr) bool { return bytes.Equal(m, ifc.HardwareAddr) }) {
			out = append(out, ifc.HardwareAddr)
		}
	}
	slices.SortFunc(out, func(a, b net.HardwareAddr) int { return bytes.Compare(a, b) })
	if len(out) > most {
		out = out[:most]
	}
	return out
}
