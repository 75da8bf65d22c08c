package metallb

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/migrate"
	"github.com/metal-ccm/metal-ccm/pkg/migrate/golden"
)

const (
	pool = `apiVersion: metallb.io/v1beta1
kind: IPAddressPool
metadata: {name: p, namespace: metallb-system}
spec: {addresses: [198.18.40.0/24]}
---
apiVersion: metallb.io/v1beta1
kind: BGPAdvertisement
metadata: {name: all, namespace: metallb-system}
---
`
	peer = `apiVersion: metallb.io/v1beta2
kind: BGPPeer
metadata: {name: r, namespace: metallb-system}
spec: {myASN: 64512, peerASN: 64600, peerAddress: 198.18.10.1`
)

// TestReport checks, for each field with no equivalent, the report's item
// (object and field) and that the rest still converts into a config the
// project's loader takes.
func TestReport(t *testing.T) {
	for _, tc := range []struct {
		name  string
		input string
		opts  Options
		want  []string // "Object: field", in order
		check func(*testing.T, *config.CloudConfig)
	}{
		{name: "everything maps", input: pool + peer + "}\n"},
		{name: "namespace selectors", input: `apiVersion: metallb.io/v1beta1
kind: IPAddressPool
metadata: {name: p, namespace: metallb-system}
spec:
  addresses: [198.18.40.0/24]
  serviceAllocation: {namespaceSelectors: [{matchLabels: {team: a}}]}
`, want: []string{"IPAddressPool metallb-system/p: spec.serviceAllocation.namespaceSelectors", "IPAddressPool metallb-system/p: "}},
		{name: "two service selectors", input: `apiVersion: metallb.io/v1beta1
kind: IPAddressPool
metadata: {name: p, namespace: metallb-system}
spec:
  addresses: [198.18.40.0/24]
  serviceAllocation: {serviceSelectors: [{matchLabels: {a: b}}, {matchLabels: {c: d}}]}
---
apiVersion: metallb.io/v1beta1
kind: L2Advertisement
metadata: {name: l2, namespace: metallb-system}
`, want: []string{"IPAddressPool metallb-system/p: spec.serviceAllocation.serviceSelectors"},
			check: func(t *testing.T, c *config.CloudConfig) {
				if c.LoadBalancer.Pools[0].ServiceSelector != nil {
					t.Error("a selector was kept")
				}
			}},
		{name: "a name that is no DNS label", input: strings.Replace(pool, "name: p,", "name: pool.a,", 1),
			want: []string{"IPAddressPool metallb-system/pool.a: metadata.name"},
			check: func(t *testing.T, c *config.CloudConfig) {
				if c.LoadBalancer.Pools[0].Name != "pool-a" {
					t.Errorf("pool name %q", c.LoadBalancer.Pools[0].Name)
				}
			}},
		{name: "a field unknown to the converter", input: strings.Replace(pool, "spec: {", "spec: {futureField: 1, ", 1),
			want: []string{"IPAddressPool metallb-system/p: spec.futureField"}},
		{name: "avoidBuggyIPs leaves nothing", input: strings.Replace(pool, "[198.18.40.0/24]}", "[198.18.40.0/24, 198.18.41.255/32], avoidBuggyIPs: true}", 1),
			want: []string{"IPAddressPool metallb-system/p: spec.addresses[1]"},
			check: func(t *testing.T, c *config.CloudConfig) {
				if got := c.LoadBalancer.Pools[0].Addresses; !slices.Equal(got, []string{"198.18.40.1-198.18.40.254"}) {
					t.Errorf("addresses %v", got)
				}
			}},
		{name: "session options", input: pool + peer + `, keepaliveTime: 10s, connectTime: 5s, routerID: 198.18.10.2,
  sourceAddress: 198.18.10.2, bfdProfile: fast, vrf: red, dualStackAddressFamily: true, password: secret}
`, want: []string{
			"BGPPeer metallb-system/r: spec.keepaliveTime", "BGPPeer metallb-system/r: spec.connectTime",
			"BGPPeer metallb-system/r: spec.routerID", "BGPPeer metallb-system/r: spec.sourceAddress",
			"BGPPeer metallb-system/r: spec.password", "BGPPeer metallb-system/r: spec.bfdProfile",
			"BGPPeer metallb-system/r: spec.vrf", "BGPPeer metallb-system/r: spec.dualStackAddressFamily",
		}, check: func(t *testing.T, c *config.CloudConfig) {
			if c.BGP.Peers[0].PasswordFile != "/etc/metal-ccm/bgp/r" {
				t.Errorf("passwordFile %q", c.BGP.Peers[0].PasswordFile)
			}
		}},
		{name: "source address with replicas", input: pool + peer + ", sourceAddress: 198.18.10.2, nodeSelectors: [{matchLabels: {a: b}}]}\n",
			opts: Options{AnnounceFrom: config.AnnounceFromReplicas},
			want: []string{"BGPPeer metallb-system/r: spec.nodeSelectors"},
			check: func(t *testing.T, c *config.CloudConfig) {
				if c.BGP.Peers[0].LocalAddress != "198.18.10.2" {
					t.Errorf("localAddress %q", c.BGP.Peers[0].LocalAddress)
				}
			}},
		{name: "two node selectors", input: pool + peer + ", nodeSelectors: [{matchLabels: {a: b}}, {matchLabels: {c: d}}]}\n",
			want: []string{"BGPPeer metallb-system/r: spec.nodeSelectors"}},
		{name: "peers left out", input: pool + peer + `, myASN: 64513}
---
apiVersion: metallb.io/v1beta2
kind: BGPPeer
metadata: {name: s-dyn, namespace: metallb-system}
spec: {myASN: 64512, dynamicASN: external, peerAddress: 198.18.10.3}
---
apiVersion: metallb.io/v1beta2
kind: BGPPeer
metadata: {name: t-unnumbered, namespace: metallb-system}
spec: {myASN: 64512, peerASN: 64600, interface: eth1}
---
apiVersion: metallb.io/v1beta2
kind: BGPPeer
metadata: {name: u-again, namespace: metallb-system}
spec: {myASN: 64512, peerASN: 64600, peerAddress: 198.18.10.1}
`, want: []string{
			"BGPPeer metallb-system/s-dyn: spec.dynamicASN", "BGPPeer metallb-system/t-unnumbered: spec.interface",
			"BGPPeer metallb-system/u-again: spec.peerAddress",
			"BGPPeer metallb-system/s-dyn: spec.myASN", "BGPPeer metallb-system/t-unnumbered: spec.myASN",
			"BGPPeer metallb-system/u-again: spec.myASN",
		}, check: func(t *testing.T, c *config.CloudConfig) {
			if len(c.BGP.Peers) != 1 || c.BGP.ASN != 64513 {
				t.Errorf("peers %v, asn %d", c.BGP.Peers, c.BGP.ASN)
			}
		}},
		{name: "advertisement fields", input: strings.Replace(pool, "kind: BGPAdvertisement\nmetadata: {name: all, namespace: metallb-system}\n",
			`kind: BGPAdvertisement
metadata: {name: all, namespace: metallb-system}
spec:
  nodeSelectors: [{matchLabels: {a: b}}]
  peers: [r, gone]
  communities: ["64512:1", "large:64512:1:2", "not-an-alias"]
  localPref: 100
  aggregationLength: 24
---
apiVersion: metallb.io/v1beta1
kind: BGPAdvertisement
metadata: {name: other, namespace: metallb-system}
spec: {localPref: 200, aggregationLength: 25}
`, 1) + peer + ", peerASN: 64512}\n",
			want: []string{
				"BGPAdvertisement metallb-system/all: spec.nodeSelectors", "BGPAdvertisement metallb-system/all: spec.peers",
				"BGPAdvertisement metallb-system/all: spec.communities[2]", "BGPAdvertisement metallb-system/other: spec.localPref",
				"BGPAdvertisement metallb-system/all: spec.aggregationLength",
			}, check: func(t *testing.T, c *config.CloudConfig) {
				ads := c.LoadBalancer.Pools[0].BGPAdvertisements
				if len(ads) != 1 || *ads[0].LocalPreference != 100 || *ads[0].Aggregate.IPv4Length != 24 || !ads[0].Aggregate.Only ||
					!slices.Equal(ads[0].Communities, []string{"64512:1"}) || !slices.Equal(ads[0].LargeCommunities, []string{"64512:1:2"}) {
					t.Errorf("advertisements %+v", ads)
				}
			}},
		{name: "an advertisement to a peer that is not there", input: strings.Replace(pool, "metadata: {name: all, namespace: metallb-system}\n",
			"metadata: {name: all, namespace: metallb-system}\nspec: {peers: [gone]}\n", 1) + peer + "}\n",
			want: []string{"BGPAdvertisement metallb-system/all: spec.peers", "IPAddressPool metallb-system/p: "}},
		{name: "a pool selector that is no selector", input: strings.Replace(pool, "metadata: {name: all, namespace: metallb-system}\n",
			"metadata: {name: all, namespace: metallb-system}\nspec: {ipAddressPoolSelectors: [{matchExpressions: [{key: a, operator: Sometimes}]}]}\n", 1),
			want: []string{"BGPAdvertisement metallb-system/all: spec.ipAddressPoolSelectors[0]", "IPAddressPool metallb-system/p: "}},
		{name: "L2 advertisements that differ", input: `apiVersion: metallb.io/v1beta1
kind: IPAddressPool
metadata: {name: p, namespace: metallb-system}
spec: {addresses: [198.18.0.200-198.18.0.250]}
---
apiVersion: metallb.io/v1beta1
kind: L2Advertisement
metadata: {name: a, namespace: metallb-system}
spec: {interfaces: [eth0], nodeSelectors: [{matchLabels: {a: b}}]}
---
apiVersion: metallb.io/v1beta1
kind: L2Advertisement
metadata: {name: b, namespace: metallb-system}
spec: {interfaces: [eth1]}
`, want: []string{
			"L2Advertisement metallb-system/a: spec.interfaces", "L2Advertisement metallb-system/b: spec.interfaces",
			"L2Advertisement metallb-system/a: spec.nodeSelectors",
		}},
		{name: "other objects", input: pool + `apiVersion: v1
kind: ConfigMap
metadata: {name: config, namespace: metallb-system}
---
apiVersion: metallb.io/v1beta1
kind: ServiceL2Status
metadata: {name: s, namespace: metallb-system}
---
apiVersion: metallb.io/v1beta1
kind: BFDProfile
metadata: {name: fast, namespace: metallb-system}
spec: {receiveInterval: 300, echoMode: true}
`, want: []string{"ConfigMap metallb-system/config: ", "ServiceL2Status metallb-system/s: ", "BFDProfile metallb-system/fast: spec.echoMode"}},
		{name: "BFD profile", input: pool + peer + `, bfdProfile: fast}
---
apiVersion: metallb.io/v1beta1
kind: BFDProfile
metadata: {name: fast, namespace: metallb-system}
spec: {receiveInterval: 200, transmitInterval: 20, detectMultiplier: 5, passiveMode: true}
`, want: []string{"BFDProfile metallb-system/fast: spec.transmitInterval", "BFDProfile metallb-system/fast: spec.passiveMode"},
			check: func(t *testing.T, c *config.CloudConfig) {
				b := c.BGP.Peers[0].BFD
				if b == nil || b.ReceiveInterval.Duration != 200*time.Millisecond || b.TransmitInterval.Duration != 50*time.Millisecond || b.Multiplier != 5 {
					t.Errorf("bfd %+v, want 200ms, 50ms (the least), 5", b)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := golden.Items(t, tc.input, func(objs []migrate.Object) (*config.CloudConfig, *migrate.Report, error) {
				return Convert(objs, tc.opts)
			}, tc.want)
			if tc.check != nil {
				tc.check(t, cfg)
			}
		})
	}
}
