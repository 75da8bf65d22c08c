package config

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

// TestUnnumberedPeers: a peer on an interface (a link-local session) is
// refused with the fields it cannot have, each error naming its field.
func TestUnnumberedPeers(t *testing.T) {
	pools := "loadBalancer:\n  pools:\n  - {name: p, addresses: [198.18.100.0/24]}\n"
	for _, tc := range []struct {
		name, bgp string
		want      []string
	}{
		{"address and interface", "bgp:\n  asn: 64512\n  routerID: 198.18.0.1\n  peers:\n  - {address: 198.18.10.1, interface: eth1, asn: 64500}\n",
			[]string{`bgp.peers[0].interface: Invalid value: "eth1": give address or interface, not both`}},
		{"neither", "bgp:\n  asn: 64512\n  peers:\n  - {asn: 64500}\n",
			[]string{`bgp.peers[0].address: Required value`}},
		{"interface name", "bgp:\n  asn: 64512\n  routerID: 198.18.0.1\n  peers:\n  - {interface: \"eth/1\", asn: 64500}\n  - {interface: a-very-long-interface-name, asn: 64500}\n",
			[]string{`bgp.peers[0].interface: Invalid value: "eth/1": not an interface name`, `bgp.peers[1].interface: Too long`}},
		{"duplicate interface", "bgp:\n  asn: 64512\n  routerID: 198.18.0.1\n  peers:\n  - {interface: eth1, asn: 64500}\n  - {interface: eth1, asn: 64501, name: other}\n",
			[]string{`bgp.peers[1].interface: Duplicate value: "eth1 (also peers[0])"`}},
		{"link-local address not link-local", "bgp:\n  asn: 64512\n  routerID: 198.18.0.1\n  peers:\n  - {interface: eth1, linkLocalAddress: \"2001:db8::1\", asn: 64500}\n",
			[]string{`bgp.peers[0].linkLocalAddress: Invalid value: "2001:db8::1": not an IPv6 link-local address (fe80::/10)`}},
		{"link-local address zoned", "bgp:\n  asn: 64512\n  routerID: 198.18.0.1\n  peers:\n  - {interface: eth1, linkLocalAddress: \"fe80::1%eth1\", asn: 64500}\n",
			[]string{`bgp.peers[0].linkLocalAddress: Invalid value: "fe80::1%eth1": must not have a zone`}},
		{"link-local address not an address", "bgp:\n  asn: 64512\n  routerID: 198.18.0.1\n  peers:\n  - {interface: eth1, linkLocalAddress: router, asn: 64500}\n",
			[]string{`bgp.peers[0].linkLocalAddress: Invalid value: "router": not an IP address`}},
		{"link-local address without interface", "bgp:\n  asn: 64512\n  peers:\n  - {address: 198.18.10.1, linkLocalAddress: \"fe80::1\", asn: 64500}\n",
			[]string{`bgp.peers[0].linkLocalAddress: Invalid value: "fe80::1": only with interface`}},
		{"fields a link-local session cannot have", "bgp:\n  asn: 64512\n  routerID: 198.18.0.1\n  peers:\n  - {interface: eth1, asn: 64500, localAddress: \"2001:db8::2\", ebgpMultihop: 2}\n",
			[]string{`bgp.peers[0].localAddress: Invalid value: "2001:db8::2": not with interface`,
				`bgp.peers[0].ebgpMultihop: Invalid value: 2: not with interface`}},
		{"a BFD profile of its own checked as an address peer's", "bgp:\n  asn: 64512\n  routerID: 198.18.0.1\n  peers:\n  - {interface: eth1, asn: 64500, bfd: {multiplier: 1}}\n",
			[]string{`bgp.peers[0].bfd.multiplier: Invalid value: 1`}},
		{"default gateway of no family", "bgp:\n  asn: 64512\n  peers:\n  - {defaultGateway: ipv4, asn: 64500}\n",
			[]string{`bgp.peers[0].defaultGateway: Unsupported value: "ipv4": supported values: "IPv4", "IPv6"`}},
		{"default gateway and address", "bgp:\n  asn: 64512\n  peers:\n  - {defaultGateway: IPv4, address: 198.18.10.1, asn: 64500}\n",
			[]string{`bgp.peers[0].defaultGateway: Invalid value: "IPv4": give address, interface or defaultGateway, one of them`}},
		{"two default gateways of a family", "bgp:\n  asn: 64512\n  peers:\n  - {defaultGateway: IPv6, asn: 64500}\n  - {defaultGateway: IPv6, asn: 64501}\n",
			[]string{`bgp.peers[1].name: Duplicate value: "default-gateway-ipv6 (also peers[0])"`}},
		{"replicas with interface peers only need a router ID", "bgp:\n  asn: 64512\n  peers:\n  - {interface: eth1, asn: 64500}\n",
			[]string{`bgp.routerID: Required value`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(header + pools + tc.bgp))
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse = %v, want ErrInvalid", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestUnnumberedPeersAccepted: what a peer on an interface parses to.
func TestUnnumberedPeersAccepted(t *testing.T) {
	pools := "loadBalancer:\n  pools:\n  - {name: p, addresses: [198.18.100.0/24]}\n"
	for _, tc := range []struct {
		name, bgp, peerName string
		ll                  netip.Addr
	}{
		{"node agents, router found on the link", "bgp:\n  asn: 64512\n  announceFrom: Nodes\n  peers:\n  - {interface: eth1, asn: 64500}\n", "eth1", netip.Addr{}},
		{"replicas with a router ID and the router's address", "bgp:\n  asn: 64512\n  routerID: 198.18.0.1\n  peers:\n  - {interface: eth1, linkLocalAddress: \"fe80::1\", asn: 64500, name: tor}\n",
			"tor", netip.MustParseAddr("fe80::1")},
		{"node agents, the default route's gateway", "bgp:\n  asn: 64512\n  announceFrom: Nodes\n  peers:\n  - {interface: eth1, asn: 64500}\n  - {defaultGateway: IPv4, asn: 64500}\n", "default-gateway-ipv4", netip.Addr{}},
		{"node agents with BFD on the link", "bgp:\n  asn: 64512\n  announceFrom: Nodes\n  peers:\n  - {interface: eth1, asn: 64500, bfd: {receiveInterval: 300ms, transmitInterval: 300ms, multiplier: 3}}\n", "eth1", netip.Addr{}},
		{"replicas with an address peer beside it derive the router ID", "bgp:\n  asn: 64512\n  peers:\n  - {address: 198.18.10.1, asn: 64500}\n  - {interface: eth1, asn: 64500}\n", "eth1", netip.Addr{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(header + pools + tc.bgp))
			if err != nil {
				t.Fatal(err)
			}
			if !c.BGP.HasInterfacePeer() {
				t.Error("HasInterfacePeer() = false")
			}
			p := &c.BGP.Peers[len(c.BGP.Peers)-1]
			if p.PeerName() != tc.peerName || p.LinkLocalAddr() != tc.ll || p.Addr().IsValid() {
				t.Errorf("peer %q link-local %v address %v, want %q %v and none", p.PeerName(), p.LinkLocalAddr(), p.Addr(), tc.peerName, tc.ll)
			}
		})
	}
}
