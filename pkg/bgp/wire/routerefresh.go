package wire

import (
	"encoding/binary"
	"fmt"
)

// ROUTE-REFRESH subtypes (RFC 7313 3): a plain request, and the
// beginning and end markers of an enhanced route refresh.
const (
	RefreshRequest uint8 = 0
	RefreshBegin   uint8 = 1
	RefreshEnd     uint8 = 2
)

// RouteRefresh is a ROUTE-REFRESH message (RFC 2918): the router asks for
// the family's routes again, which the speaker answers by resending them.
type RouteRefresh struct {
	Family  Family
	Subtype uint8
}

// DecodeRouteRefresh reads a ROUTE-REFRESH body: AFI, subtype (reserved
// before RFC 7313), SAFI. A family the speaker does not send is the
// caller's to ignore (RFC 2918 4).
func DecodeRouteRefresh(body []byte) (RouteRefresh, error) {
	if len(body) != 4 {
		// RFC 7313 5 makes another length an error for the
		// enhanced subtypes; a longer plain request carries ORF
		// entries (RFC 5291), which the speaker never negotiates.
		return RouteRefresh{}, fmt.Errorf("route refresh: %d bytes: %w", len(body), ErrLength)
	}
	return RouteRefresh{
		Family:  Family{AFI: binary.BigEndian.Uint16(body), SAFI: body[3]},
		Subtype: body[2],
	}, nil
}

// AppendTo appends the ROUTE-REFRESH to b (the speaker sends none; tests
// and a future enhanced refresh do).
func (m *RouteRefresh) AppendTo(b []byte) []byte {
	b, start := appendHeader(b, TypeRouteRefresh)
	b = binary.BigEndian.AppendUint16(b, m.Family.AFI)
	b = append(b, m.Subtype, m.Family.SAFI)
	b, _ = finishHeader(b, start) // 23 bytes
	return b
}
