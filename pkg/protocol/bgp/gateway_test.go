package bgp

import (
	"errors"
	"net/netip"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestDefaultGatewayPeer: a peer with defaultGateway dials the gateway of
// the default route of its family: an address session for a global
// gateway, a link-local session on the gateway's link for a link-local one
// (the agent then gives its own link-local address as next hop); without
// such a route the speaker's config fails, naming the peer.
func TestDefaultGatewayPeer(t *testing.T) {
	cfg := agentConfig(t, "  - {defaultGateway: IPv4, asn: 65001}\n  - {defaultGateway: IPv6, asn: 65001}\n")
	n := &v1.Node{Status: v1.NodeStatus{Addresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "198.18.30.11"}}}}
	saved := defaultGateway
	t.Cleanup(func() { defaultGateway = saved })
	for _, tc := range []struct {
		name     string
		gateways map[bool]netip.Addr // by is4
		links    map[bool]string
		wantErr  error
		want     [2]string // address, interface of each peer
		wantSelf [2]bool
	}{
		{name: "global gateways", gateways: map[bool]netip.Addr{true: netip.MustParseAddr("198.18.30.1"), false: netip.MustParseAddr("2001:db8:30::1")},
			want: [2]string{"198.18.30.1 ", "2001:db8:30::1 "}},
		{name: "IPv6 gateway from Router Advertisements", gateways: map[bool]netip.Addr{true: netip.MustParseAddr("198.18.30.1"), false: netip.MustParseAddr("fe80::1")},
			links: map[bool]string{false: "eth0"}, want: [2]string{"198.18.30.1 ", "fe80::1 eth0"}, wantSelf: [2]bool{false, true}},
		{name: "no IPv6 default route", gateways: map[bool]netip.Addr{true: netip.MustParseAddr("198.18.30.1")}, wantErr: ErrNoDefaultGateway},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defaultGateway = func(is4 bool) (netip.Addr, string, error) {
				a, ok := tc.gateways[is4]
				if !ok {
					return netip.Addr{}, "", ErrNoDefaultGateway
				}
				return a, tc.links[is4], nil
			}
			got, err := agentSpeakerConfig(cfg, n)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr != nil {
				return
			}
			for i, p := range got.Peers {
				if s := p.Address.String() + " " + p.Interface; s != tc.want[i] || p.NextHopSelf != tc.wantSelf[i] {
					t.Errorf("peer %d (%s): %q next-hop self %v, want %q %v", i, p.Name, s, p.NextHopSelf, tc.want[i], tc.wantSelf[i])
				}
			}
		})
	}
}
