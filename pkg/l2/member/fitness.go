package member

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"slices"
)

// Fitness is what an agent says, in its metadata, of its own node's
// ability to carry L2 addresses. Liveness in the membership only says that
// the agent runs; a node whose kube-proxy is down, or that has no
// interface on an address's segment, would answer for the address and
// drop its traffic. Every agent reads the others' fitness from the same
// gossip as their liveness, so views that agree on who is alive agree on
// who is fit, and all choose the same owner.
type Fitness struct {
	// Forwards: the node's kube-proxy passes its health check. False also
	// while it has not been checked yet, so that a starting agent takes
	// addresses only once its node forwards.
	Forwards bool
	// AnyAddress: the agent answers on the interfaces l2.interfaces names,
	// whatever the address (some of them exist).
	AnyAddress bool
	// Reach are the on-link prefixes of the interfaces it would answer on
	// (those that overlap an L2 pool): it can answer for an address they
	// contain. Unused with AnyAddress.
	Reach []netip.Prefix
	// MACs are the hardware addresses of the node's interfaces that answer
	// (at most MaxMACs): a claim for an address from one of them is the
	// cluster's own double answer during a takeover, not a conflict.
	MACs []net.HardwareAddr
	// Conflicts are the addresses this node found in use by a host outside
	// the cluster (at most MaxConflicts): no node answers them while a
	// bound member reports them (conflict.go).
	Conflicts []Conflict
	// Witness: the agent holds the vote of the two-node witness
	// (pkg/l2/witness). Others read it only to show who answers: an agent
	// counts its own vote from its own Lease, never from its gossip.
	Witness bool
	// Holds are the L2 addresses the agent answers for, told only with
	// l2.failback Sticky (holds.go): the others then leave them with it
	// while it can carry them. Sorted.
	Holds []netip.Addr
}

// Fit is the fitness of a member that says nothing of it (an agent of an
// earlier release): fit for every address, as before fitness was carried.
var Fit = Fitness{Forwards: true, AnyAddress: true}

// Serves reports whether the node can carry addr: it forwards, and it has
// an interface to answer on.
func (f Fitness) Serves(addr netip.Addr) bool {
	if !f.Forwards {
		return false
	}
	if f.AnyAddress {
		return true
	}
	addr = addr.Unmap()
	return slices.ContainsFunc(f.Reach, func(p netip.Prefix) bool { return p.Contains(addr) })
}

// Equal reports whether f and o say the same.
func (f Fitness) Equal(o Fitness) bool {
	return f.Forwards == o.Forwards && f.AnyAddress == o.AnyAddress && f.Witness == o.Witness && slices.Equal(f.Reach, o.Reach) &&
		slices.EqualFunc(f.MACs, o.MACs, func(a, b net.HardwareAddr) bool { return bytes.Equal(a, b) }) && slices.EqualFunc(f.Conflicts, o.Conflicts, Conflict.Equal) && slices.Equal(f.Holds, o.Holds)
}

// Held reports whether the member says it answers for addr.
func (f Fitness) Held(addr netip.Addr) bool {
	_, ok := slices.BinarySearchFunc(f.Holds, addr.Unmap(), netip.Addr.Compare)
	return ok
}

func (f Fitness) String() string {
	reach := fmt.Sprint(f.Reach)
	if f.AnyAddress {
		reach = "any address"
	}
	out := fmt.Sprintf("forwards=%t reach=%s", f.Forwards, reach)
	if len(f.Conflicts) > 0 {
		out += fmt.Sprintf(" conflicts=%v", f.Conflicts)
	}
	if f.Witness {
		out += " witness"
	}
	if len(f.Holds) > 0 {
		out += fmt.Sprintf(" holds=%v", f.Holds)
	}
	return out
}

// Fitness flags in the metadata.
const (
	flagForwards   = 1 << 0
	flagAnyAddress = 1 << 1
	flagWitness    = 1 << 2 // unknown to earlier releases, which ignore it
)

// encodeFitness appends f: flags (1) | prefix count (1) | count × (length 4
// or 16, address, bits (1)).
func encodeFitness(b []byte, f Fitness) ([]byte, error) {
	var flags byte
	if f.Forwards {
		flags |= flagForwards
	}
	if f.AnyAddress {
		flags |= flagAnyAddress
	}
	if f.Witness {
		flags |= flagWitness
	}
	if len(f.Reach) > 255 {
		return nil, fmt.Errorf("%d prefixes in reach: at most 255", len(f.Reach))
	}
	b = append(b, flags, byte(len(f.Reach))) //nolint:gosec // at most 255, checked above
	for i, p := range f.Reach {
		if !p.IsValid() {
			return nil, fmt.Errorf("prefix %d of %d in reach is not valid", i+1, len(f.Reach))
		}
		s := p.Addr().Unmap().AsSlice()
		bits := p.Bits()
		if p.Addr().Is4In6() {
			bits -= 96
		}
		b = append(b, byte(len(s))) //nolint:gosec // 4 or 16
		b = append(b, s...)
		b = append(b, byte(bits)) //nolint:gosec // at most 128
	}
	return b, nil
}

// decodeFitness reads what encodeFitness wrote at the start of b, and
// returns what follows it.
func decodeFitness(b []byte) (Fitness, []byte, error) {
	if len(b) < 2 {
		return Fitness{}, nil, fmt.Errorf("%w: fitness of %d bytes", errMeta, len(b))
	}
	f := Fitness{Forwards: b[0]&flagForwards != 0, AnyAddress: b[0]&flagAnyAddress != 0, Witness: b[0]&flagWitness != 0}
	n, rest := int(b[1]), b[2:]
	for range n {
		if len(rest) < 1 || (rest[0] != 4 && rest[0] != 16) || len(rest) < 2+int(rest[0]) {
			return Fitness{}, nil, fmt.Errorf("%w: reach prefix %d of %d", errMeta, len(f.Reach)+1, n)
		}
		a, _ := netip.AddrFromSlice(rest[1 : 1+rest[0]])
		p, err := a.Prefix(int(rest[1+rest[0]]))
		if err != nil { // more bits than the address has
			return Fitness{}, nil, fmt.Errorf("%w: reach prefix %d of %d: %d bits", errMeta, len(f.Reach)+1, n, rest[1+rest[0]])
		}
		f.Reach = append(f.Reach, p)
		rest = rest[2+rest[0]:]
	}
	return f, rest, nil
}
