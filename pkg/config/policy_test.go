package config

import (
	"net/netip"
	"strings"
	"testing"
)

const policyPeers = `bgp:
  asn: 64512
  peers:
  - {name: core, address: 198.18.0.1, asn: 64512, labels: {role: core}}
  - {name: edge, address: 198.18.0.2, asn: 64500, labels: {role: edge}}
  - {address: "2001:db8::1", asn: 64500, labels: {role: edge}}
`

func TestPolicyValidationErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want []string // each must appear in the error text
	}{
		{
			name: "bad peers' names and labels",
			in: header + `bgp:
  asn: 64512
  peers:
  - {name: Core_1, address: 198.18.0.1, asn: 64500, labels: {"bad key!": x}}
  - {name: "198.18.0.3", address: 198.18.0.2, asn: 64500}
  - {address: 198.18.0.3, asn: 64500}
`,
			want: []string{
				`bgp.peers[0].name: Invalid value: "Core_1"`,
				`bgp.peers[0].labels: Invalid value: "bad key!"`,
				`bgp.peers[1].name: Invalid value: "198.18.0.3"`,
				`bgp.peers[2].name: Duplicate value: "198.18.0.3 (also peers[1])"`,
			},
		},
		{
			name: "bad advertisements",
			in: header + policyPeers + `loadBalancer:
  pools:
  - name: a
    addresses: [198.18.100.0/26]
    bgpAdvertisements:
    - peers: [core, nowhere, core]
      communities: ["65000:100", "65536:1", "no-such", "64512:1:2"]
      largeCommunities: ["64512:1", "1:2:3"]
    - peers: [edge]
      peerSelector: {matchLabels: {role: edge}}
    - peerSelector: {matchLabels: {role: spine}}
    - peerSelector: {matchLabels: {role: edge}}
      localPreference: 200
    - peers: [core]
      aggregate: {}
    serviceCommunities: ["65000:1", "1:2:3", "bad"]
  - name: b
    addresses: [198.18.100.64/26]
    bgpAdvertisements:
    - aggregate: {ipv4Length: 24, ipv6Length: 0}
  - name: c
    addresses: [198.18.102.0/24]
    bgpAdvertisements:
    - aggregate: {ipv4Length: 32}
  - name: l2
    addresses: [198.18.101.0/24]
    announce: [L2]
    bgpAdvertisements: [{}]
    serviceCommunities: ["65000:1"]
    weightedECMP: true
`,
			want: []string{
				`loadBalancer.pools[0].bgpAdvertisements[0].peers[1]: Not found: "nowhere"`,
				`loadBalancer.pools[0].bgpAdvertisements[0].peers[2]: Duplicate value: "core"`,
				`loadBalancer.pools[0].bgpAdvertisements[0].communities[1]: Invalid value: "65536:1"`,
				`loadBalancer.pools[0].bgpAdvertisements[0].communities[2]: Invalid value: "no-such"`,
				`loadBalancer.pools[0].bgpAdvertisements[0].communities[3]: Invalid value: "64512:1:2"`,
				`loadBalancer.pools[0].bgpAdvertisements[0].largeCommunities[0]: Invalid value: "64512:1"`,
				`loadBalancer.pools[0].bgpAdvertisements[1].peerSelector: Invalid value`,
				`loadBalancer.pools[0].bgpAdvertisements[2]: Invalid value: "peerSelector role=spine": selects no peer`,
				`loadBalancer.pools[0].bgpAdvertisements[3].localPreference: Invalid value: 200: local preference is for iBGP peers only: peer edge has AS 64500, bgp.asn is 64512`,
				`loadBalancer.pools[0].bgpAdvertisements[3]: Invalid value: "edge": peer edge already gets the pool from bgpAdvertisements[1]`,
				`loadBalancer.pools[0].bgpAdvertisements[4]: Invalid value: "core": peer core already gets the pool from bgpAdvertisements[0]`,
				`loadBalancer.pools[0].bgpAdvertisements[4].aggregate: Required value: ipv4Length or ipv6Length`,
				`loadBalancer.pools[0].serviceCommunities[2]: Invalid value: "bad"`,
				`loadBalancer.pools[1].bgpAdvertisements[0].aggregate.ipv4Length: Invalid value: 24: the aggregates of 198.18.100.64-198.18.100.127 cover pool a's 198.18.100.0-198.18.100.63`,
				`loadBalancer.pools[1].bgpAdvertisements[0].aggregate.ipv6Length: Invalid value: 0: must be from 1 to 127`,
				`loadBalancer.pools[2].bgpAdvertisements[0].aggregate.ipv4Length: Invalid value: 32: must be from 1 to 31`,
				`loadBalancer.pools[3].bgpAdvertisements: Invalid value: 1: the pool is not announced with BGP`,
				`loadBalancer.pools[3].serviceCommunities: Invalid value: ["65000:1"]: the pool is not announced with BGP`,
				`loadBalancer.pools[3].weightedECMP: Invalid value: true: the pool is not announced with BGP`,
			},
		},
		{
			name: "advertisements without peers",
			in: header + `loadBalancer:
  pools:
  - name: a
    addresses: [198.18.100.0/24]
    bgpAdvertisements: [{communities: ["65000:1"]}]
`,
			want: []string{`bgp.peers: Required value: bgpAdvertisements need peers to send to`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.in))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestPolicyParsedValues(t *testing.T) {
	cfg, err := Parse([]byte(header + policyPeers + `loadBalancer:
  pools:
  - name: public
    addresses: [198.18.100.0/24, "2001:db8:100::/120"]
    bgpAdvertisements:
    - peerSelector: {matchLabels: {role: edge}}
      communities: ["65000:100", no-export]
      largeCommunities: ["64512:1:2"]
      aggregate: {ipv4Length: 24, ipv6Length: 64, only: true}
    - peers: [core]
      localPreference: 200
    serviceCommunities: ["65000:200", "64512:9:9"]
  - name: plain
    addresses: [198.18.101.0/24]
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.BGP.Peers[2].PeerName(); got != "2001:db8::1" {
		t.Errorf("unnamed peer's name = %q, want its address", got)
	}
	pub := cfg.LoadBalancer.PoolOf(mustAddr(t, "198.18.100.7"))
	if pub == nil || pub.Name != "public" {
		t.Fatalf("PoolOf(198.18.100.7) = %v", pub)
	}
	if got := strings.Join(pub.BGPAdvertisements[0].PeerNames(), " "); got != "edge 2001:db8::1" {
		t.Errorf("edge advertisement's peers = %q", got)
	}
	if got := pub.BGPAdvertisements[0].CommunitySet().String(); got != "65000:100,no-export,64512:1:2" {
		t.Errorf("communities = %q", got)
	}
	if got := strings.Join(pub.BGPAdvertisements[1].PeerNames(), " "); got != "core" {
		t.Errorf("core advertisement's peers = %q", got)
	}
	if got := pub.AllowedServiceCommunities().String(); got != "65000:200,64512:9:9" {
		t.Errorf("allowed = %q", got)
	}
	if p := cfg.LoadBalancer.PoolOf(mustAddr(t, "198.18.102.1")); p != nil {
		t.Errorf("PoolOf outside every pool = %s", p.Name)
	}
}

func mustAddr(t *testing.T, s string) netip.Addr {
	t.Helper()
	a, err := netip.ParseAddr(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
