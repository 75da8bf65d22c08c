package l2

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
)

// ErrNoInterface is wrapped by the error for an address that has no
// interface to be answered on.
var ErrNoInterface = errors.New("no interface to answer on")

// ErrInterfaceNotFound is wrapped by the error for a name in
// Options.Interfaces that names no interface of the node.
var ErrInterfaceNotFound = errors.New("interface not found")

// iface is what the choice of interfaces needs to know of one network
// interface, as plain values so that the choice can be tested without a
// network.
type iface struct {
	Name         string
	Index        int
	MTU          int
	Flags        net.Flags
	HardwareAddr net.HardwareAddr
	Prefixes     []netip.Prefix
}

// netInterface is the value that the socket libraries take.
func (i iface) netInterface() *net.Interface {
	return &net.Interface{Index: i.Index, MTU: i.MTU, Name: i.Name, HardwareAddr: i.HardwareAddr, Flags: i.Flags}
}

// ethernet tells whether the interface has an Ethernet address to answer
// with: ARP and NDP replies carry it, and a point-to-point interface (a
// tunnel) has none to give.
func (i iface) ethernet() bool { return len(i.HardwareAddr) == 6 }

// listInterfaces reads the interfaces of the network namespace of the
// calling thread.
func listInterfaces() ([]iface, error) {
	nis, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("list interfaces: %w", err)
	}
	out := make([]iface, 0, len(nis))
	for _, ni := range nis {
		addrs, err := ni.Addrs()
		if err != nil {
			return nil, fmt.Errorf("list addresses of %s: %w", ni.Name, err)
		}
		ifc := iface{Name: ni.Name, Index: ni.Index, MTU: ni.MTU, Flags: ni.Flags, HardwareAddr: ni.HardwareAddr}
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			ip, ok := netip.AddrFromSlice(ipn.IP)
			if !ok {
				continue
			}
			ones, _ := ipn.Mask.Size()
			ifc.Prefixes = append(ifc.Prefixes, netip.PrefixFrom(ip.Unmap(), ones))
		}
		out = append(out, ifc)
	}
	return out, nil
}

// selectInterfaces returns the interfaces to answer for addr on.
//
// With names (Options.Interfaces) it is those interfaces, whatever their
// addresses, since the operator said so; a name that matches no interface,
// or one without an Ethernet address, gives an error wrapping
// ErrInterfaceNotFound or ErrNoInterface, and the others are still
// returned so that one wrong name loses nothing else.
//
// Without names it is every up, non-loopback Ethernet interface that holds
// an address whose prefix contains addr: the segments on which a host can
// ask for addr without a router. None gives an error wrapping
// ErrNoInterface.
func selectInterfaces(addr netip.Addr, ifaces []iface, names []string) ([]iface, error) {
	if len(names) > 0 {
		return namedInterfaces(addr, ifaces, names)
	}
	var out []iface
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 || !ifc.ethernet() {
			continue
		}
		if slices.ContainsFunc(ifc.Prefixes, func(p netip.Prefix) bool { return p.Contains(addr) }) {
			out = append(out, ifc)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: %w: no up, non-loopback Ethernet interface has an address whose prefix contains it", addr, ErrNoInterface)
	}
	return out, nil
}

func namedInterfaces(addr netip.Addr, ifaces []iface, names []string) ([]iface, error) {
	var out []iface
	var errs []error
	for _, name := range names {
		i := slices.IndexFunc(ifaces, func(ifc iface) bool { return ifc.Name == name })
		switch {
		case i < 0:
			errs = append(errs, fmt.Errorf("%s: %w: %q (of the interfaces to answer on)", addr, ErrInterfaceNotFound, name))
		case slices.ContainsFunc(out, func(o iface) bool { return o.Index == ifaces[i].Index }):
			// Named twice: answered once.
		case !ifaces[i].ethernet():
			errs = append(errs, fmt.Errorf("%s: %w: %q has no Ethernet address", addr, ErrNoInterface, name))
		default:
			out = append(out, ifaces[i])
		}
	}
	return out, errors.Join(errs...)
}

// Reach tells which addresses the responder could answer for on this
// node's interfaces now, by the rules of selectInterfaces: with names
// (Options.Interfaces), any address, when one of them is an Ethernet
// interface; without, the addresses of the on-link prefixes of the up,
// non-loopback Ethernet interfaces. Only the prefixes that keep returns
// true for are listed (those that overlap an L2 pool), sorted and masked.
func Reach(names []string, keep func(netip.Prefix) bool) (anyAddress bool, reach []netip.Prefix, err error) {
	ifaces, err := listInterfaces()
	if err != nil {
		return false, nil, err
	}
	anyAddress, reach = reachOf(ifaces, names, keep)
	return anyAddress, reach, nil
}

func reachOf(ifaces []iface, names []string, keep func(netip.Prefix) bool) (anyAddress bool, reach []netip.Prefix) {
	if len(names) > 0 {
		return slices.ContainsFunc(ifaces, func(ifc iface) bool { return slices.Contains(names, ifc.Name) && ifc.ethernet() }), nil
	}
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 || !ifc.ethernet() {
			continue
		}
		for _, p := range ifc.Prefixes {
			if p = p.Masked(); keep(p) && !slices.Contains(reach, p) {
				reach = append(reach, p)
			}
		}
	}
	slices.SortFunc(reach, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return a.Bits() - b.Bits()
	})
	return false, reach
}
