package member

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/hashicorp/memberlist"
)

// The node metadata every member gossips (memberlist caps it at 512 bytes):
//
//	version (1) | role (1) | address count (1) | count × (length 4 or 16, address)
//	version 2 appends: fitness (encodeFitness)
//	version 3 appends: MACs and conflicts (encodeConflicts)
//	version 4 appends: the addresses held (encodeHolds)
//
// A later version only appends fields, so a reader takes the fields it
// knows from any version at least its own: agents of two releases can run
// side by side during a rolling update.
const metaVersion = 4

// role is what a member is in the election.
type role byte

const (
	roleAgent    role = 0 // counted and chosen
	roleObserver role = 1 // joins and watches only (the CCM)
)

type meta struct {
	role      role
	addresses []netip.Addr
	fitness   Fitness // Fit when a version 1 member sent it
}

var errMeta = errors.New("malformed member metadata")

func (m meta) encode() ([]byte, error) {
	if len(m.addresses) > 255 {
		return nil, fmt.Errorf("%d addresses: at most 255", len(m.addresses))
	}
	b := []byte{metaVersion, byte(m.role), byte(len(m.addresses))} //nolint:gosec // at most 255, checked above
	for i, a := range m.addresses {
		if !a.IsValid() {
			return nil, fmt.Errorf("address %d of %d is not valid", i+1, len(m.addresses))
		}
		s := a.Unmap().AsSlice()    // 4 or 16 bytes: the length tells the family; a zone has no meaning off this node
		b = append(b, byte(len(s))) //nolint:gosec // 4 or 16
		b = append(b, s...)
	}
	b, err := encodeFitness(b, m.fitness)
	if err != nil {
		return nil, err
	}
	// Over memberlist's cap, the addresses held give way first (they are
	// left to rendezvous hashing), then the conflicts, then the MACs: what
	// the agent says of its node's fitness must get through, and a
	// conflict not reported is still not answered by this node.
	f := m.fitness
	for {
		all, err := encodeConflicts(b, f)
		if err == nil {
			all, err = encodeHolds(all, f.Holds)
		}
		switch {
		case err != nil:
			return nil, err
		case len(all) <= memberlist.MetaMaxSize:
			return all, nil
		case len(f.Holds) > 0:
			f.Holds = f.Holds[:len(f.Holds)-1]
		case len(f.Conflicts) > 0:
			f.Conflicts = f.Conflicts[:len(f.Conflicts)-1]
		case len(f.MACs) > 0:
			f.MACs = f.MACs[:len(f.MACs)-1]
		default:
			return nil, fmt.Errorf("%d addresses and %d prefixes take %d bytes of metadata, more than memberlist's %d", len(m.addresses), len(m.fitness.Reach), len(all), memberlist.MetaMaxSize)
		}
	}
}

func decodeMeta(b []byte) (meta, error) {
	if len(b) < 3 {
		return meta{}, fmt.Errorf("%w: %d bytes", errMeta, len(b))
	}
	if b[0] < 1 {
		return meta{}, fmt.Errorf("%w: version %d", errMeta, b[0])
	}
	m := meta{role: role(b[1])}
	n, rest := int(b[2]), b[3:]
	for range n {
		if len(rest) < 1 || (rest[0] != 4 && rest[0] != 16) || len(rest) < 1+int(rest[0]) {
			return meta{}, fmt.Errorf("%w: address %d of %d", errMeta, len(m.addresses)+1, n)
		}
		a, _ := netip.AddrFromSlice(rest[1 : 1+rest[0]])
		m.addresses = append(m.addresses, a)
		rest = rest[1+rest[0]:]
	}
	if b[0] < 2 {
		m.fitness = Fit
		return m, nil
	}
	f, rest, err := decodeFitness(rest)
	if err != nil {
		return meta{}, err
	}
	if b[0] >= 3 {
		if f.MACs, f.Conflicts, rest, err = decodeConflicts(rest); err != nil {
			return meta{}, err
		}
	}
	if b[0] >= 4 {
		if f.Holds, err = decodeHolds(rest); err != nil {
			return meta{}, err
		}
	}
	m.fitness = f
	return m, nil
}
