package wire

import "fmt"

// Family is an address family and subsequent address family (RFC 4760).
type Family struct {
	AFI  uint16
	SAFI uint8
}

// AFI values (IANA address family numbers) and the unicast SAFI.
const (
	AFIIPv4     uint16 = 1
	AFIIPv6     uint16 = 2
	SAFIUnicast uint8  = 1
)

// The families the speaker sends.
var (
	IPv4Unicast = Family{AFI: AFIIPv4, SAFI: SAFIUnicast}
	IPv6Unicast = Family{AFI: AFIIPv6, SAFI: SAFIUnicast}
)

func (f Family) String() string {
	switch f {
	case IPv4Unicast:
		return "ipv4-unicast"
	case IPv6Unicast:
		return "ipv6-unicast"
	}
	return fmt.Sprintf("afi %d safi %d", f.AFI, f.SAFI)
}

// addrBits is the address length of the family's prefixes, 0 for a family
// the package cannot encode.
func (f Family) addrBits() int {
	switch f {
	case IPv4Unicast:
		return 32
	case IPv6Unicast:
		return 128
	}
	return 0
}

// hasFamily reports whether fs holds f: the lists are a few families
// long, a search beats a map.
func hasFamily(fs []Family, f Family) bool {
	for _, g := range fs {
		if g == f {
			return true
		}
	}
	return false
}
