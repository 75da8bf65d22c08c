package netlab

import (
	"fmt"
	"net"
	"net/netip"
	"slices"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"

	"github.com/metal-ccm/metal-ccm/test/framework"
)

// L2Host is a host of the L2 segment outside the cluster, such as a machine
// set up by hand with a static address: its kernel answers ARP and NDP for
// its addresses as any host's does.
type L2Host struct {
	// NS is its network namespace.
	NS    string
	lab   *L2Lab
	addrs []netip.Addr
}

// AddHost attaches a new namespace named after name (at most 8
// characters: the switch's port is "h-"+name) to the segment, its link
// statically configured with addrs (a /24 or a /64 each, IPv6 without
// Duplicate Address Detection). Remove takes it off the segment; the lab's
// Close deletes it in any case.
func (l *L2Lab) AddHost(name string, addrs ...netip.Addr) (*L2Host, error) {
	if len(name) == 0 || len(name) > 8 {
		return nil, fmt.Errorf("netlab L2 host %q: a name of 1 to 8 characters", name)
	}
	for _, a := range addrs {
		if err := checkAddr(a); err != nil {
			return nil, fmt.Errorf("netlab L2 host %s: %w", name, err)
		}
	}
	ns := "mccm-" + l.ID + "-" + name
	if err := addNamespace(&l.mu, &l.namespaces, ns); err != nil {
		return nil, fmt.Errorf("netlab L2 host %s: %w", name, err)
	}
	if err := l.attach(segment{ns: l.Switch}, ns, "h-"+name, addrs...); err != nil {
		return nil, fmt.Errorf("netlab L2 host %s: %w", name, err)
	}
	return &L2Host{NS: ns, lab: l, addrs: slices.Clone(addrs)}, nil
}

// Announce sends a gratuitous ARP for each of the host's IPv4 addresses, as
// a host that takes an address tells the segment (RFC 5227 announcements).
func (h *L2Host) Announce() error {
	err := framework.RunInNetNS(h.NS, func() error {
		ifi, err := net.InterfaceByName(nsLink)
		if err != nil {
			return err
		}
		c, err := arp.Dial(ifi)
		if err != nil {
			return err
		}
		defer func() { _ = c.Close() }()
		for _, a := range h.addrs {
			if !a.Is4() {
				continue
			}
			p, err := arp.NewPacket(arp.OperationRequest, ifi.HardwareAddr, a, ethernet.Broadcast, a)
			if err != nil {
				return err
			}
			if err := c.WriteTo(p, ethernet.Broadcast); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("netlab L2 host %s: announce: %w", h.NS, err)
	}
	return nil
}

// MAC is the host's link's hardware address.
func (h *L2Host) MAC() (net.HardwareAddr, error) { return hardwareAddr(h.NS, nsLink) }

// Remove deletes the host's namespace, its link with it: the host is gone
// from the segment.
func (h *L2Host) Remove() error {
	h.lab.mu.Lock()
	defer h.lab.mu.Unlock()
	i := slices.Index(h.lab.namespaces, h.NS)
	if i < 0 {
		return nil
	}
	if err := run("ip", "netns", "del", h.NS); err != nil {
		return fmt.Errorf("netlab L2 host: %w", err)
	}
	h.lab.namespaces = slices.Delete(h.lab.namespaces, i, i+1)
	return nil
}
