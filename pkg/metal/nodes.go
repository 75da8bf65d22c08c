package metal

import (
	"net/netip"
	"strings"

	v1 "k8s.io/api/core/v1"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/metal-ccm/metal-ccm/pkg/config"
)

// nodeIndex answers which machine a node is, and which topology its addresses
// fall in. It is built once per config and never changed.
type nodeIndex struct {
	byName   map[string]*config.Machine
	byID     map[string]*config.Machine
	topology []topologyRule
	policy   config.DiscoveryPolicy
}

type topologyRule struct {
	subnet       netip.Prefix
	region, zone string
}

func newNodeIndex(n *config.Nodes) *nodeIndex {
	idx := &nodeIndex{
		byName: make(map[string]*config.Machine, len(n.Inventory)),
		byID:   make(map[string]*config.Machine, len(n.Inventory)),
		policy: n.Discovery.Policy,
	}
	for i := range n.Inventory {
		m := &n.Inventory[i]
		idx.byName[m.Name] = m
		idx.byID[m.ID] = m
	}
	for i := range n.Topology {
		r := &n.Topology[i]
		idx.topology = append(idx.topology, topologyRule{subnet: r.Prefix(), region: r.Region, zone: r.Zone})
	}
	return idx
}

// machineFor finds the inventory machine of a node: by the id in its providerID
// first, then by its name.
func (idx *nodeIndex) machineFor(node *v1.Node) (*config.Machine, bool) {
	if pid, err := parseProviderID(node.Spec.ProviderID); err == nil && pid.source == sourceInventory {
		if m, ok := idx.byID[pid.id]; ok {
			return m, true
		}
	}
	m, ok := idx.byName[node.Name]
	return m, ok
}

// topologyFor returns the region and zone of the first address that falls in a
// topology rule's subnet. Subnets do not overlap, so one address has one rule.
func (idx *nodeIndex) topologyFor(addrs []v1.NodeAddress) (region, zone string) {
	for _, a := range addrs {
		if a.Type != v1.NodeInternalIP && a.Type != v1.NodeExternalIP {
			continue
		}
		ip, err := netip.ParseAddr(a.Address)
		if err != nil {
			continue
		}
		ip = ip.Unmap()
		for _, r := range idx.topology {
			if r.subnet.Contains(ip) {
				return r.region, r.zone
			}
		}
	}
	return "", ""
}

// providedAddresses are the addresses of a node that is not described by the
// inventory: each IP the kubelet was given with --node-ip (the provided-node-ip
// annotation) as InternalIP, falling back to the IPs already in its status,
// and the node name as Hostname.
func providedAddresses(node *v1.Node) []v1.NodeAddress {
	var addrs []v1.NodeAddress
	if ann := node.Annotations[cloudproviderapi.AnnotationAlphaProvidedIPAddr]; ann != "" {
		for _, s := range strings.Split(ann, ",") {
			ip, err := netip.ParseAddr(strings.TrimSpace(s))
			if err != nil || ip.IsUnspecified() {
				continue
			}
			addrs = append(addrs, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip.String()})
		}
	}
	if len(addrs) == 0 {
		for _, a := range node.Status.Addresses {
			if a.Type == v1.NodeInternalIP || a.Type == v1.NodeExternalIP {
				addrs = append(addrs, a)
			}
		}
	}
	if len(addrs) == 0 {
		return nil
	}
	return append(addrs, v1.NodeAddress{Type: v1.NodeHostName, Address: node.Name})
}
