package l2

import (
	"errors"
	"net/netip"
)

// link is one interface that answers for some addresses. Its sockets are
// opened when it gets its first address of their family and closed when it
// has none left, so that a node with no LoadBalancer address (or none of one
// family) holds no raw socket and wakes for no packet.
type link struct {
	ifc iface
	v4  map[netip.Addr]struct{}
	v6  map[netip.Addr]struct{}
	arp *arpConn
	ndp *ndpConn
}

func newLink(ifc iface) *link {
	return &link{ifc: ifc, v4: map[netip.Addr]struct{}{}, v6: map[netip.Addr]struct{}{}}
}

// has tells whether addr is answered here. The caller holds the
// Responder's lock, at least for reading.
func (l *link) has(addr netip.Addr) bool {
	if addr.Is4() {
		_, ok := l.v4[addr]
		return ok
	}
	_, ok := l.v6[addr]
	return ok
}

func (l *link) empty() bool { return len(l.v4) == 0 && len(l.v6) == 0 }

// add starts answering for addr, opening the family's socket if it is the
// first; opened is the new socket whose reader the caller starts. On error
// nothing changed.
func (l *link) add(addr netip.Addr) (openedARP *arpConn, openedNDP *ndpConn, err error) {
	if addr.Is4() {
		if l.arp == nil {
			if l.arp, err = openARP(l.ifc); err != nil {
				return nil, nil, err
			}
			openedARP = l.arp
		}
		l.v4[addr] = struct{}{}
		return openedARP, nil, nil
	}
	if l.ndp == nil {
		if l.ndp, err = openNDP(l.ifc); err != nil {
			return nil, nil, err
		}
		openedNDP = l.ndp
	}
	if err := l.ndp.join(addr); err != nil {
		if openedNDP != nil {
			_ = l.ndp.close()
			l.ndp = nil
		}
		return nil, nil, err
	}
	l.v6[addr] = struct{}{}
	return nil, openedNDP, nil
}

// remove stops answering for addr at once, closing the family's socket
// with the last address. The address is gone even if leaving its group or
// closing fails.
func (l *link) remove(addr netip.Addr) error {
	if addr.Is4() {
		delete(l.v4, addr)
		if len(l.v4) == 0 && l.arp != nil {
			c := l.arp
			l.arp = nil
			return c.close()
		}
		return nil
	}
	if _, ok := l.v6[addr]; !ok {
		return nil
	}
	delete(l.v6, addr)
	if l.ndp == nil {
		return nil
	}
	if len(l.v6) == 0 {
		c := l.ndp
		l.ndp = nil
		return c.close() // closing leaves every group
	}
	return l.ndp.leave(addr)
}

// announce sends one gratuitous ARP or unsolicited Neighbor Advertisement
// for addr.
func (l *link) announce(addr netip.Addr) error {
	switch {
	case addr.Is4() && l.arp != nil:
		return l.arp.announce(addr)
	case addr.Is6() && l.ndp != nil:
		return l.ndp.announce(addr)
	}
	return nil
}

func (l *link) close() error {
	var errs []error
	if l.arp != nil {
		errs = append(errs, l.arp.close())
		l.arp = nil
	}
	if l.ndp != nil {
		errs = append(errs, l.ndp.close())
		l.ndp = nil
	}
	clear(l.v4)
	clear(l.v6)
	return errors.Join(errs...)
}
