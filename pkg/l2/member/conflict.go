package member

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
)

// Bounds of what version 3 of the metadata carries, so that it stays within
// memberlist's 512 bytes beside the addresses and the reach: 8 MACs take 49
// bytes, 8 IPv6 conflicts 185.
const (
	MaxMACs      = 8
	MaxConflicts = 8
)

// Conflict is an address a node found in use by a host outside the cluster
// (RFC 5227): a reply or announcement for it from a MAC that is none of the
// cluster's.
type Conflict struct {
	Addr netip.Addr
	// MAC is the foreign host's, nil when its message did not say.
	MAC net.HardwareAddr
}

// Equal reports whether c and o are the same conflict.
func (c Conflict) Equal(o Conflict) bool { return c.Addr == o.Addr && bytes.Equal(c.MAC, o.MAC) }

func (c Conflict) String() string {
	if len(c.MAC) == 0 {
		return c.Addr.String() + "@unknown"
	}
	return c.Addr.String() + "@" + c.MAC.String()
}

// encodeConflicts appends f's MACs and conflicts: MAC count (1) | count × 6 |
// conflict count (1) | count × (length 4 or 16, address, MAC length 0 or 6,
// MAC).
func encodeConflicts(b []byte, f Fitness) ([]byte, error) {
	if len(f.MACs) > MaxMACs {
		return nil, fmt.Errorf("%d MACs: at most %d", len(f.MACs), MaxMACs)
	}
	if len(f.Conflicts) > MaxConflicts {
		return nil, fmt.Errorf("%d conflicts: at most %d", len(f.Conflicts), MaxConflicts)
	}
	b = append(b, byte(len(f.MACs))) //nolint:gosec // at most MaxMACs, checked above
	for i, mac := range f.MACs {
		if len(mac) != 6 {
			return nil, fmt.Errorf("MAC %d of %d is not 6 bytes", i+1, len(f.MACs))
		}
		b = append(b, mac...)
	}
	b = append(b, byte(len(f.Conflicts))) //nolint:gosec // at most MaxConflicts, checked above
	for i, c := range f.Conflicts {
		if !c.Addr.IsValid() || (len(c.MAC) != 0 && len(c.MAC) != 6) {
			return nil, fmt.Errorf("conflict %d of %d: %v", i+1, len(f.Conflicts), c)
		}
		s := c.Addr.Unmap().AsSlice()
		b = append(b, byte(len(s))) //nolint:gosec // 4 or 16
		b = append(b, s...)
		b = append(b, byte(len(c.MAC))) //nolint:gosec // 0 or 6
		b = append(b, c.MAC...)
	}
	return b, nil
}

// decodeConflicts reads what encodeConflicts wrote at the start of b; what
// follows (a later version's fields) is left.
func decodeConflicts(b []byte) ([]net.HardwareAddr, []Conflict, []byte, error) {
	if len(b) < 1 || len(b) < 1+6*int(b[0]) {
		return nil, nil, nil, fmt.Errorf("%w: MACs cut short", errMeta)
	}
	var macs []net.HardwareAddr
	for i := range int(b[0]) {
		macs = append(macs, net.HardwareAddr(bytes.Clone(b[1+6*i:7+6*i])))
	}
	rest := b[1+6*int(b[0]):]
	if len(rest) < 1 {
		return nil, nil, nil, fmt.Errorf("%w: conflicts missing", errMeta)
	}
	n := int(rest[0])
	rest = rest[1:]
	var out []Conflict
	for range n {
		if len(rest) < 1 || (rest[0] != 4 && rest[0] != 16) || len(rest) < 2+int(rest[0]) {
			return nil, nil, nil, fmt.Errorf("%w: conflict %d of %d", errMeta, len(out)+1, n)
		}
		a, _ := netip.AddrFromSlice(rest[1 : 1+rest[0]])
		rest = rest[1+rest[0]:]
		if (rest[0] != 0 && rest[0] != 6) || len(rest) < 1+int(rest[0]) {
			return nil, nil, nil, fmt.Errorf("%w: conflict %d of %d: MAC", errMeta, len(out)+1, n)
		}
		c := Conflict{Addr: a}
		if rest[0] == 6 {
			c.MAC = net.HardwareAddr(bytes.Clone(rest[1:7]))
		}
		rest = rest[1+rest[0]:]
		out = append(out, c)
	}
	return macs, out, rest, nil
}
