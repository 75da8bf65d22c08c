package annotation

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/community"
	"github.com/metal-ccm/metal-ccm/pkg/ipam"
)

// valueType reads one type of annotation value; name is how the reference
// calls that type. parse returns plain errors: Typed.Parse adds the
// annotation's name and ErrInvalid.
type valueType[T any] struct {
	name  string
	parse func(raw string) (T, error)
}

// text is any string, taken as it is (named for the reference): what it
// names is checked where it is used (an unknown pool is UnknownPool, not an
// invalid annotation).
func text(name string) valueType[string] {
	return valueType[string]{name: name, parse: func(raw string) (string, error) { return raw, nil }}
}

// ipsPerFamily is a comma-separated list of IP addresses, at most one per
// family, without zones; IPv4-mapped IPv6 addresses read as IPv4. A blank
// list is no address.
var ipsPerFamily = valueType[[]netip.Addr]{
	name:  "comma-separated IP addresses, at most one per family",
	parse: ParseIPsPerFamily,
}

// ParseIPsPerFamily reads such a list (the provider reads
// spec.loadBalancerIP with it too).
func ParseIPsPerFamily(raw string) ([]netip.Addr, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, nil
	}
	var out []netip.Addr
	seen := map[ipam.Family]bool{}
	for _, s := range strings.Split(raw, ",") {
		s = strings.TrimSpace(s)
		ip, err := netip.ParseAddr(s)
		if err != nil || ip.Zone() != "" {
			return nil, fmt.Errorf("%q is not an IP address", s)
		}
		ip = ip.Unmap()
		f := ipam.FamilyOf(ip)
		if seen[f] {
			return nil, fmt.Errorf("more than one %s address", f)
		}
		seen[f] = true
		out = append(out, ip)
	}
	return out, nil
}

// communityList is a comma-separated list of BGP communities
// (community.ParseList).
var communityList = valueType[community.Set]{
	name:  "comma-separated BGP communities (AS:value, well-known names, global:local1:local2)",
	parse: community.ParseList,
}
