package metal

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/nodes"
	"github.com/metal-ccm/metal-ccm/pkg/powerstate"
)

var _ cloudprovider.InstancesV2 = (*Cloud)(nil)

// ErrNodeIPUnknown is returned for a node whose addresses cannot be told.
var ErrNodeIPUnknown = errors.New("node has no provided node IP and no IP address")

// InstanceExists is false only when the configuration or the power-state
// source says the machine is gone: the node was initialized from an
// inventory machine (its providerID is metal://inventory/ID) and neither
// that ID nor the node's name is in the inventory any longer; or the source
// can tell existence (powerstate.Existence: metal3, whose BareMetalHost was
// deleted) and says (false, nil). Discovered, never-initialized and foreign
// nodes otherwise always exist, and any error of the source is "exists", so
// no flaky signal deletes a node.
func (c *Cloud) InstanceExists(ctx context.Context, node *v1.Node) (bool, error) {
	st := c.state.Load()
	entry, inInventory := st.nodes.machineFor(node)
	if !inInventory {
		if pid, err := parseProviderID(node.Spec.ProviderID); err == nil && pid.source == sourceInventory {
			klog.FromContext(ctx).Info("Machine is no longer in the inventory", "node", klog.KObj(node), "providerID", node.Spec.ProviderID)
			return false, nil
		}
	}
	ex, ok := st.power.(powerstate.Existence)
	if !ok {
		return true, nil
	}
	m := powerstate.Machine{Node: node}
	if inInventory {
		m.ID, m.Settings = entry.ID, entry.PowerState
	}
	exists, err := ex.Exists(ctx, m)
	if err != nil {
		klog.FromContext(ctx).V(4).Info("The power-state source cannot tell whether the machine exists: it does", "node", klog.KObj(node), "err", err)
		return true, nil
	}
	if !exists {
		source := st.cfg.Nodes.PowerState.Source
		klog.FromContext(ctx).Info("The power-state source says the machine is gone", "node", klog.KObj(node), "source", source)
		c.eventf(node, v1.EventTypeWarning, ReasonMachineGone, "Power-state source %s says the machine is gone (asked at %s): the node is reported not to exist", source, time.Now().UTC().Format(time.RFC3339))
	}
	return exists, nil
}

// InstanceShutdown asks the configured power-state source about the node's
// machine, with the machine's inventory id and settings when it has an
// inventory entry. Only the source's Off is a shutdown; an error, whatever
// its cause, is not. A changed conclusion is an Event on the node.
func (c *Cloud) InstanceShutdown(ctx context.Context, node *v1.Node) (bool, error) {
	st := c.state.Load()
	m := powerstate.Machine{Node: node}
	if entry, ok := st.nodes.machineFor(node); ok {
		m.ID, m.Settings = entry.ID, entry.PowerState
	}
	off, err := st.memo.Shutdown(ctx, m)
	if st.cfg.Nodes.PowerState.Source != powerstate.None && !errors.Is(err, ErrAnswerPending) {
		// Only Off is evidence of a shutdown: an error is never one.
		c.powerEvent(node, st.cfg.Nodes.PowerState.Source, off && err == nil, err, time.Now())
	}
	if err != nil {
		return false, fmt.Errorf("instance shutdown %s: %w", node.Name, err)
	}
	return off, nil
}

// InstanceMetadata describes the machine of a node, from the inventory or,
// for a node not in it, from discovery.
func (c *Cloud) InstanceMetadata(ctx context.Context, node *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	st := c.state.Load()
	if m, ok := st.nodes.machineFor(node); ok {
		return st.machineMetadata(node, m)
	}
	if st.nodes.policy == config.DiscoveryReject && uninitialized(node) {
		// nil metadata leaves the node tainted without a retry storm; it is
		// looked at again on its next update or resync.
		klog.FromContext(ctx).V(2).Info("Node is not in the inventory and discovery is Reject", "node", klog.KObj(node))
		c.eventf(node, v1.EventTypeWarning, ReasonDiscoveryRejected,
			"Node %s is not in the inventory and nodes.discovery.policy is Reject: it stays uninitialized", node.Name)
		return nil, nil
	}
	md, err := st.discoveredMetadata(node)
	if errors.Is(err, ErrNodeIPUnknown) {
		c.eventf(node, v1.EventTypeWarning, ReasonNodeIPUnknown,
			"Node %s has no provided-node-ip annotation (kubelet --node-ip) and no IP address", node.Name)
	}
	return md, err
}

func (st *state) machineMetadata(node *v1.Node, m *config.Machine) (*cloudprovider.InstanceMetadata, error) {
	addrs := make([]v1.NodeAddress, 0, len(m.Addresses))
	for _, a := range m.Addresses {
		addrs = append(addrs, v1.NodeAddress{Type: a.Type, Address: a.Address})
	}
	if len(addrs) == 0 {
		addrs = providedAddresses(node)
	}
	region, zone := m.Region, m.Zone
	if region == "" || zone == "" {
		r, z := st.nodes.topologyFor(addrs)
		if region == "" {
			region = r
		}
		if zone == "" {
			zone = z
		}
	}
	return &cloudprovider.InstanceMetadata{
		ProviderID:       providerID{source: sourceInventory, id: m.ID}.String(),
		InstanceType:     m.InstanceType,
		NodeAddresses:    addrs,
		Region:           region,
		Zone:             zone,
		AdditionalLabels: maps.Clone(m.Labels),
	}, nil
}

func (st *state) discoveredMetadata(node *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	addrs := providedAddresses(node)
	if len(addrs) == 0 {
		return nil, fmt.Errorf("discover node %s: %w", node.Name, ErrNodeIPUnknown)
	}
	region, zone := st.nodes.topologyFor(addrs)
	return &cloudprovider.InstanceMetadata{
		ProviderID:    providerID{source: sourceDiscovered, id: node.Name}.String(),
		InstanceType:  st.cfg.Nodes.DefaultInstanceType,
		NodeAddresses: addrs,
		Region:        region,
		Zone:          zone,
	}, nil
}

// uninitialized: the node still has the taint of --cloud-provider=external;
// the announcer reads the same taint the same way.
func uninitialized(node *v1.Node) bool {
	return !nodes.Initialized(node)
}
