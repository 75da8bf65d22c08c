package l2

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ndp"
	"golang.org/x/net/ipv6"
)

func TestClaims(t *testing.T) {
	client := netip.MustParseAddr("198.18.121.2")
	onLink := &ipv6.ControlMessage{IfIndex: 3, HopLimit: ndp.HopLimit}
	for _, tc := range []struct {
		name  string
		claim func() (claim, bool)
		want  netip.Addr // invalid: no claim
	}{
		{"an announcement", func() (claim, bool) { return arpClaim(arpFrame(t, arp.OperationRequest, theirMAC, vip4, vip4)) }, vip4},
		{"a reply", func() (claim, bool) { return arpClaim(arpFrame(t, arp.OperationReply, theirMAC, vip4, client)) }, vip4},
		{"a question asked from it", func() (claim, bool) { return arpClaim(arpFrame(t, arp.OperationRequest, theirMAC, vip4, client)) }, vip4},
		{"a probe claims nothing", func() (claim, bool) {
			return arpClaim(arpFrame(t, arp.OperationRequest, theirMAC, netip.IPv4Unspecified(), vip4))
		}, netip.Addr{}},
		{"garbage", func() (claim, bool) { return arpClaim([]byte{1, 2, 3}) }, netip.Addr{}},
		{"an advertisement", func() (claim, bool) { return ndpClaim(3, advertisement(theirMAC, vip6, false), onLink) }, vip6},
		{"an advertisement on another interface", func() (claim, bool) {
			return ndpClaim(4, advertisement(theirMAC, vip6, false), onLink)
		}, netip.Addr{}},
		{"an advertisement routed here", func() (claim, bool) {
			return ndpClaim(3, advertisement(theirMAC, vip6, false), &ipv6.ControlMessage{IfIndex: 3, HopLimit: 64})
		}, netip.Addr{}},
		{"a solicitation", func() (claim, bool) { return ndpClaim(3, &ndp.NeighborSolicitation{TargetAddress: vip6}, onLink) }, netip.Addr{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := tc.claim()
			if ok != tc.want.IsValid() || (ok && (c.addr != tc.want || !bytes.Equal(c.mac, theirMAC))) {
				t.Errorf("claim %v, %v; want %v by %s", c, ok, tc.want, theirMAC)
			}
		})
	}
}
