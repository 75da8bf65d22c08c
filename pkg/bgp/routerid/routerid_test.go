package routerid

import (
	"net/netip"
	"testing"
)

// TestFromIPv6: one-to-one within a /96, apart across subnets that
// share suffixes, never zero.
func TestFromIPv6(t *testing.T) {
	for _, c := range []struct{ addr, want string }{
		{"2001:db8:1::10", "32.0.13.168"},     // 0x20010db8 ^ 0x00010000 ^ 0 ^ 0x10
		{"2001:db8:2::10", "32.3.13.168"},     // another rack, the same suffix
		{"2001:db8:1::11", "32.0.13.169"},     // the next node of the first rack
		{"2001:db8::2001:db8", "32.1.13.184"}, // the XOR is zero: the last 32 bits alone
		{"::", "0.0.0.1"},
		{"198.18.0.7", "198.18.0.7"}, // For only
	} {
		t.Run(c.addr, func(t *testing.T) {
			if got := For(netip.MustParseAddr(c.addr)); got != netip.MustParseAddr(c.want) {
				t.Errorf("For(%s) = %s, want %s", c.addr, got, c.want)
			}
		})
	}
	// One-to-one within a /96.
	seen := map[netip.Addr]bool{}
	base := netip.MustParseAddr("2001:db8:30::").As16()
	for i := range 4096 {
		a := base
		a[14], a[15] = byte(i>>8), byte(i)
		id := FromIPv6(netip.AddrFrom16(a))
		if seen[id] || !id.IsValid() || id.IsUnspecified() {
			t.Fatalf("%s: identifier %s taken or invalid", netip.AddrFrom16(a), id)
		}
		seen[id] = true
	}
}
