package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/metal-ccm/metal-ccm/pkg/lbrule"
)

const header = "apiVersion: metal-ccm.io/v1alpha1\nkind: CloudConfig\n"

func defaultServiceStatus() ServiceStatus {
	return ServiceStatus{MinInterval: &metav1.Duration{Duration: DefaultStatusMinInterval}, WritesPerSecond: DefaultStatusWritesPerSecond}
}

func defaultPowerState() PowerState {
	return PowerState{Source: "none", OutOfService: OutOfService{ConfirmFor: &metav1.Duration{Duration: DefaultOutOfServiceConfirmFor}, DeletePods: ptr.To(false)},
		Fencing: Fencing{After: &metav1.Duration{Duration: DefaultFencingAfter}, MaxNodes: ptr.To[int32](DefaultFencingMaxNodes)}}
}

func TestDefaults(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want CloudConfig
	}{
		{
			name: "empty document",
			in:   "",
			want: CloudConfig{APIVersion: APIVersion, Kind: Kind, Nodes: Nodes{
				DefaultInstanceType: "metal",
				Discovery:           Discovery{Policy: DiscoveryAccept},
				PowerState:          defaultPowerState(),
			}, Routes: Routes{NextHopAddressType: "InternalIP"}, BGP: BGP{MaxPathsPerAddress: DefaultMaxPathsPerAddress, OnStop: StopAuto, AnnounceFrom: AnnounceFromReplicas},
				HealthChecks: defaultHealthChecks(), L2: L2{MemberlistPort: DefaultMemberlistPort, Failback: DefaultFailback}, ServiceStatus: defaultServiceStatus()},
		},
		{
			name: "machine id and instance type",
			in:   header + "nodes:\n  defaultInstanceType: small\n  inventory:\n  - name: n1\n  - name: n2\n    id: rack1-2\n    instanceType: big\n",
			want: CloudConfig{APIVersion: APIVersion, Kind: Kind, Nodes: Nodes{
				DefaultInstanceType: "small",
				Discovery:           Discovery{Policy: DiscoveryAccept},
				PowerState:          defaultPowerState(),
				Inventory: []Machine{
					{Name: "n1", ID: "n1", InstanceType: "small"},
					{Name: "n2", ID: "rack1-2", InstanceType: "big"},
				},
			}, Routes: Routes{NextHopAddressType: "InternalIP"}, BGP: BGP{MaxPathsPerAddress: DefaultMaxPathsPerAddress, OnStop: StopAuto, AnnounceFrom: AnnounceFromReplicas},
				HealthChecks: defaultHealthChecks(), L2: L2{MemberlistPort: DefaultMemberlistPort, Failback: DefaultFailback}, ServiceStatus: defaultServiceStatus()},
		},
		{
			name: "explicit values are kept",
			in:   header + "nodes:\n  discovery:\n    policy: Reject\n  powerState:\n    source: none\n",
			want: CloudConfig{APIVersion: APIVersion, Kind: Kind, Nodes: Nodes{
				DefaultInstanceType: "metal",
				Discovery:           Discovery{Policy: DiscoveryReject},
				PowerState:          defaultPowerState(),
			}, Routes: Routes{NextHopAddressType: "InternalIP"}, BGP: BGP{MaxPathsPerAddress: DefaultMaxPathsPerAddress, OnStop: StopAuto, AnnounceFrom: AnnounceFromReplicas},
				HealthChecks: defaultHealthChecks(), L2: L2{MemberlistPort: DefaultMemberlistPort, Failback: DefaultFailback}, ServiceStatus: defaultServiceStatus()},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse([]byte(tc.in))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !sameDocument(t, got, &tc.want) {
				t.Errorf("got  %+v\nwant %+v", *got, tc.want)
			}
		})
	}
}

func TestValidationErrorsNameEveryField(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want []string // each must appear in the error text
	}{
		{
			name: "wrong header",
			in:   "apiVersion: v1\nkind: Config\n",
			want: []string{`apiVersion: Unsupported value: "v1"`, `kind: Unsupported value: "Config"`},
		},
		{
			name: "unknown fields, every one, with the other errors",
			in:   header + "nodes:\n  defaultInstanceType: \"no spaces\"\n  inventroy: []\n  discovery:\n    polcy: Accept\nextra: 1\n",
			want: []string{`unknown field "nodes.inventroy"`, `unknown field "nodes.discovery.polcy"`, `unknown field "extra"`,
				`nodes.defaultInstanceType: Invalid value: "no spaces"`},
		},
		{
			name: "duplicate field",
			in:   header + "nodes:\n  defaultInstanceType: a\n  defaultInstanceType: b\n",
			want: []string{`"defaultInstanceType"`},
		},
		{
			name: "bad machines",
			in: header + `nodes:
  inventory:
  - name: Bad_Name
    addresses:
    - {type: InternalIP, address: 198.18.0.300}
    - {type: Carrier, address: x}
    zone: "not a label value!"
  - name: n1
    id: same
  - name: n1
    id: same
  - id: x
`,
			want: []string{
				`nodes.inventory[0].name: Invalid value: "Bad_Name"`,
				`nodes.inventory[0].addresses[0].address: Invalid value: "198.18.0.300": not an IP address`,
				`nodes.inventory[0].addresses[1].type: Unsupported value: "Carrier"`,
				`nodes.inventory[0].zone: Invalid value: "not a label value!"`,
				`nodes.inventory[2].name: Duplicate value: "n1 (also inventory[1])"`,
				`nodes.inventory[2].id: Duplicate value: "same (also inventory[1])"`,
				`nodes.inventory[3].name: Required value`,
			},
		},
		{
			name: "bad topology",
			in: header + `nodes:
  discovery: {policy: Maybe}
  powerState: {source: none, settings: [1, 2], outOfService: {enabled: true, confirmFor: 0s}, fencing: {enabled: true, after: 2h, maxNodes: 0, maxShare: "0%"}}
  inventory:
  - {name: n1, powerState: "bmc"}
  topology:
  - {subnet: 198.18.0.0/16, zone: a}
  - {subnet: 198.18.4.0/24, zone: b}
  - {subnet: 198.18.5.1/24, zone: c}
  - {subnet: not-a-cidr, zone: d}
  - {subnet: "2001:db8::/64"}
`,
			want: []string{
				`nodes.discovery.policy: Unsupported value: "Maybe"`,
				`nodes.powerState.settings: Invalid value: "[1,2]": must be an object`,
				`nodes.powerState.outOfService.enabled: Invalid value: true: needs a power-state source other than none`,
				`nodes.powerState.outOfService.confirmFor: Invalid value: "0s": must be from 1s to 10m0s`,
				`nodes.powerState.fencing.enabled: Invalid value: true: needs a power-state source that can power machines off`,
				`nodes.powerState.fencing.after: Invalid value: "2h0m0s": must be from 1s to 1h0m0s`,
				`nodes.powerState.fencing.maxNodes: Invalid value: 0: must be at least 1`,
				`nodes.powerState.fencing.maxShare: Invalid value: "0%": must be a percentage from "1%" to "100%"`,
				`nodes.inventory[0].powerState: Invalid value: "\"bmc\"": must be an object`,
				`nodes.topology[1].subnet: Invalid value: "198.18.4.0/24": overlaps topology[0].subnet 198.18.0.0/16`,
				`nodes.topology[2].subnet: Invalid value: "198.18.5.1/24": parse CIDR "198.18.5.1/24": host bits are set, the network is 198.18.5.0/24`,
				`nodes.topology[3].subnet: Invalid value: "not-a-cidr"`,
				`nodes.topology[4]: Required value: a region, a zone or both`,
			},
		},
		{
			name: "fast path without the taint or the health checks",
			in: header + `nodes:
  powerState: {source: ipmi, outOfService: {fastPath: true}}
healthChecks: {enabled: false}
`,
			want: []string{
				`nodes.powerState.outOfService.fastPath: Invalid value: true: needs nodes.powerState.outOfService.enabled`,
				`nodes.powerState.outOfService.fastPath: Invalid value: true: needs healthChecks.enabled`,
			},
		},
		{
			name: "node-agent fields with announceFrom Replicas",
			in: header + `bgp:
  asn: 64512
  nodeASNLabel: metal-ccm.io/asn
  peers:
  - {address: 198.18.1.1, asn: 64500, nodeSelector: {matchLabels: {rack: a}}, ebgpMultihop: 300}
`,
			want: []string{
				`bgp.nodeASNLabel: Invalid value: "metal-ccm.io/asn": only with announceFrom Nodes`,
				`bgp.peers[0].nodeSelector: Invalid value: `,
				`bgp.peers[0].ebgpMultihop: Invalid value: 300: must be from 0 to 255`,
			},
		},
		{
			name: "BFD out of bounds, and no echo",
			in: header + `bgp:
  asn: 64512
  peers:
  - {address: 198.18.1.1, asn: 64500, bfd: {receiveInterval: 10ms, transmitInterval: 1m, multiplier: 1}}
  - {address: 198.18.1.2, asn: 64500, bfd: {echo: true}}
`,
			want: []string{
				`bgp.peers[0].bfd.receiveInterval: Invalid value: "10ms": must be from 50ms to 10s`,
				`bgp.peers[0].bfd.transmitInterval: Invalid value: "1m0s": must be from 50ms to 10s`,
				`bgp.peers[0].bfd.multiplier: Invalid value: 1: must be from 2 to 255`,
				`unknown field "bgp.peers[1].bfd.echo"`,
			},
		},
		{
			name: "announceFrom Nodes refuses per-replica fields",
			in: header + `bgp:
  asn: 64512
  announceFrom: Everywhere
  routerID: 198.18.0.1
  peers:
  - {address: 198.18.1.1, asn: 64500, localAddress: 198.18.1.2, nodeSelector: {matchExpressions: [{key: rack, operator: Sometimes}]}}
`,
			want: []string{
				`bgp.announceFrom: Unsupported value: "Everywhere"`,
			},
		},
		{
			name: "announceFrom Nodes: no routerID, no localAddress, selectors that compile",
			in: header + `bgp:
  asn: 64512
  announceFrom: Nodes
  nodeASNLabel: "not a label key!"
  routerID: 198.18.0.1
  peers:
  - {address: 198.18.1.1, asn: 64500, localAddress: 198.18.1.2, nodeSelector: {matchExpressions: [{key: rack, operator: Sometimes}]}}
`,
			want: []string{
				`bgp.nodeASNLabel: Invalid value: "not a label key!"`,
				`bgp.routerID: Invalid value: "198.18.0.1": not with announceFrom Nodes`,
				`bgp.peers[0].localAddress: Invalid value: "198.18.1.2": not with announceFrom Nodes`,
				`bgp.peers[0].nodeSelector: Invalid value: `,
			},
		},
		{
			name: "bad health checks",
			in:   header + "healthChecks:\n  interval: 10ms\n  timeout: 2m\n  failuresToWithdraw: -1\n  successesToReturn: 11\n",
			want: []string{
				`healthChecks.interval: Invalid value: "10ms": must be from 100ms to 1m0s`,
				`healthChecks.timeout: Invalid value: "2m0s": must be from 100ms to 1m0s`,
				`healthChecks.failuresToWithdraw: Invalid value: -1: must be from 1 to 10`,
				`healthChecks.successesToReturn: Invalid value: 11: must be from 1 to 10`,
			},
		},
		{
			name: "HTTP checks more often than checks",
			in:   header + "healthChecks:\n  interval: 2s\n  httpInterval: 1s\n",
			want: []string{`healthChecks.httpInterval: Invalid value: "1s": must be from interval (2s) to 1m0s`},
		},
		{
			name: "bad service status limits",
			in:   header + "serviceStatus:\n  minInterval: 500ms\n  writesPerSecond: 101\n",
			want: []string{
				`serviceStatus.minInterval: Invalid value: "500ms": must be from 1s to 10m0s`,
				`serviceStatus.writesPerSecond: Invalid value: 101: must be from 1 to 100`,
			},
		},
		{
			name: "bad L2",
			in: header + `loadBalancer:
  pools:
  - {name: a, addresses: [198.18.0.0/24], announce: [L2, ARP, L2]}
l2:
  interfaces: ["", eth0, eth0, a-very-long-interface-name, "a/b"]
  nodeSelector: {matchExpressions: [{key: l2, operator: Sometimes}]}
  failback: Never
`,
			want: []string{
				`l2.failback: Unsupported value: "Never": supported values: "Rebalance", "Sticky"`,
				`loadBalancer.pools[0].announce[1]: Unsupported value: "ARP": supported values: "BGP", "L2"`,
				`loadBalancer.pools[0].announce[2]: Duplicate value: "L2"`,
				`l2.interfaces[0]: Invalid value: "": must not be empty`,
				`l2.interfaces[2]: Duplicate value: "eth0"`,
				`l2.interfaces[3]: Too long`,
				`l2.interfaces[4]: Invalid value: "a/b": not an interface name`,
				`l2.nodeSelector: Invalid value: `,
				`l2.secretFile: Required value: a pool is announced with L2`,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.in))
			if err == nil {
				t.Fatal("Parse accepted an invalid config")
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error does not wrap ErrInvalid: %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestL2Key: a pool announced with L2 needs the membership's key, or
// insecureMembership said out loud; without an L2 pool neither matters.
func TestL2Key(t *testing.T) {
	const l2Pool = "loadBalancer:\n  pools:\n  - {name: a, addresses: [198.18.0.0/24], announce: [L2]}\n"
	for _, tc := range []struct {
		name, in string
		ok       bool
	}{
		{"L2 pool, no key", l2Pool, false},
		{"L2 pool, a key file", l2Pool + "l2:\n  secretFile: /etc/metal-ccm/l2/key\n", true},
		{"L2 pool, insecure membership", l2Pool + "l2:\n  insecureMembership: true\n", true},
		{"no L2 pool, no key", "loadBalancer:\n  pools:\n  - {name: a, addresses: [198.18.0.0/24]}\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(header + tc.in))
			if (err == nil) != tc.ok {
				t.Errorf("Parse: %v, want ok %v", err, tc.ok)
			}
			if err != nil && !strings.Contains(err.Error(), "l2.secretFile: Required value") {
				t.Errorf("the error does not name l2.secretFile: %v", err)
			}
		})
	}
}

// TestPoolsHoldNoNodeAddress: a pool that holds an inventory machine's
// InternalIP or ExternalIP is refused, naming the pool and the machine.
func TestPoolsHoldNoNodeAddress(t *testing.T) {
	_, err := Parse([]byte(header + `nodes:
  inventory:
  - name: m1
    addresses: [{type: InternalIP, address: 198.18.0.10}, {type: Hostname, address: m1}]
  - name: m2
    addresses: [{type: ExternalIP, address: "2001:db8::20"}]
loadBalancer:
  pools:
  - {name: clash, addresses: [198.18.0.0/24]}
  - {name: clash6, addresses: ["2001:db8::/64"], announce: [L2]}
  - {name: clear, addresses: [198.18.1.0/24]}
l2: {insecureMembership: true}
`))
	for _, want := range []string{
		"loadBalancer.pools[0].addresses: Invalid value: ",
		"holds 198.18.0.10, an address of the machine m1 (nodes.inventory[0].addresses[0])",
		"loadBalancer.pools[1].addresses: Invalid value: ",
		"holds 2001:db8::20, an address of the machine m2 (nodes.inventory[1].addresses[0])",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "pools[2]") {
		t.Errorf("the pool without node addresses refused: %v", err)
	}
}

func defaultHealthChecks() HealthChecks {
	return HealthChecks{Enabled: ptr.To(true), Port: 10256, Interval: &metav1.Duration{Duration: time.Second},
		Timeout: &metav1.Duration{Duration: 400 * time.Millisecond}, HTTPInterval: &metav1.Duration{Duration: 10 * time.Second},
		FailuresToWithdraw: 2, SuccessesToReturn: 2}
}

// TestExamples keeps every example config shipped in the repository valid.
func TestExamples(t *testing.T) {
	paths, err := filepath.Glob("../../hack/local/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	paths = append(paths, "testdata/full.yaml", "testdata/policy.yaml")
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			if _, err := os.Stat(p); err != nil {
				t.Fatal(err)
			}
			if _, err := LoadFile(p); err != nil {
				t.Errorf("LoadFile(%s): %v", p, err)
			}
		})
	}
}

func TestLoadBalancerAndBGPValidation(t *testing.T) {
	_, err := Parse([]byte(header + `loadBalancer:
  pools:
  - name: a
    addresses: [198.18.100.0/24, "2001:db8:100::/120"]
  - name: a
    addresses: [198.18.100.128-198.18.100.130, 198.18.1.5/24, nonsense]
    namespaces: [Bad_NS]
    serviceSelector:
      matchExpressions: [{key: tier, operator: Sometimes}]
  - name: empty
bgp:
  routerID: "2001:db8::1"
  peers:
  - {address: 198.18.10.1, asn: 0, holdTime: 1s}
  - {address: 198.18.10.1, asn: 64500, localAddress: "2001:db8::2", gracefulRestart: {restartTime: 5000s}}
`))
	if err == nil {
		t.Fatal("accepted")
	}
	for _, w := range []string{
		`loadBalancer.pools[1].name: Duplicate value: "a (also pools[0])"`,
		`loadBalancer.pools[1].addresses[0]: Invalid value: "198.18.100.128-198.18.100.130": overlaps loadBalancer.pools[0].addresses[0] 198.18.100.0/24`,
		`loadBalancer.pools[1].addresses[1]: Invalid value: "198.18.1.5/24"`,
		`loadBalancer.pools[1].addresses[2]: Invalid value: "nonsense"`,
		`loadBalancer.pools[1].namespaces[0]: Invalid value: "Bad_NS"`,
		`loadBalancer.pools[1].serviceSelector: Invalid value`,
		`loadBalancer.pools[2].addresses: Required value`,
		`bgp.asn: Required value`,
		`bgp.routerID: Invalid value: "2001:db8::1": not an IPv4 address`,
		`bgp.peers[0].asn: Required value`,
		`bgp.peers[0].holdTime: Invalid value: "1s"`,
		`bgp.peers[1].address: Duplicate value`,
		`bgp.peers[1].localAddress: Invalid value: "2001:db8::2": not of the family of the peer's address`,
		`bgp.peers[1].gracefulRestart.restartTime: Invalid value: "1h23m20s"`,
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q", w)
		}
	}
	if t.Failed() {
		t.Log(err)
	}
}

// TestBGPSessionEnds pins the checks that keep a config from passing here
// and failing when the speaker starts (or after a live reload, at the next
// restart).
func TestBGPSessionEnds(t *testing.T) {
	pools := "loadBalancer:\n  pools:\n  - {name: p, addresses: [198.18.100.0/24]}\n"
	for _, tc := range []struct {
		name, bgp, want string
	}{
		{"router ID 0.0.0.0", "bgp:\n  asn: 64512\n  routerID: 0.0.0.0\n  peers:\n  - {address: 198.18.10.1, asn: 64500}\n",
			`bgp.routerID: Invalid value: "0.0.0.0": must not be 0.0.0.0`},
		{"unspecified peer", "bgp:\n  asn: 64512\n  peers:\n  - {address: 0.0.0.0, asn: 64500}\n",
			`bgp.peers[0].address: Invalid value: "0.0.0.0": must not be the unspecified address`},
		{"IPv4-mapped peer", "bgp:\n  asn: 64512\n  routerID: 198.18.10.2\n  peers:\n  - {address: \"::ffff:198.18.10.1\", asn: 64500}\n",
			`bgp.peers[0].address: Invalid value: "::ffff:198.18.10.1": must be IPv4 or IPv6, not IPv4-mapped`},
		{"zoned peer", "bgp:\n  asn: 64512\n  routerID: 198.18.10.2\n  peers:\n  - {address: \"2001:db8:10::1%eth0\", asn: 64500}\n",
			`bgp.peers[0].address: Invalid value: "2001:db8:10::1%eth0": must not have a zone`},
		{"hold time above 65535s", "bgp:\n  asn: 64512\n  peers:\n  - {address: 198.18.10.1, asn: 64500, holdTime: 65536s}\n",
			`bgp.peers[0].holdTime: Invalid value: "18h12m16s": must be 0 or from 3s to 65535s`},
		{"too many paths", "bgp:\n  maxPathsPerAddress: 256\n", `bgp.maxPathsPerAddress: Invalid value: 256: must be from 1 to 255`},
		{"no paths", "bgp:\n  maxPathsPerAddress: -1\n", `bgp.maxPathsPerAddress: Invalid value: -1: must be from 1 to 255`},
		{"unknown stop mode", "bgp:\n  onStop: Cease\n", `bgp.onStop: Unsupported value: "Cease": supported values: "Auto", "Withdraw", "GracefulRestart"`},
		{"unspecified local address", "bgp:\n  asn: 64512\n  peers:\n  - {address: 198.18.10.1, asn: 64500, localAddress: 0.0.0.0}\n",
			`bgp.peers[0].localAddress: Invalid value: "0.0.0.0": must not be the unspecified address`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(header + pools + tc.bgp))
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse = %v, want ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error lacks %q:\n%v", tc.want, err)
			}
		})
	}
	for _, ok := range []string{
		"bgp:\n  asn: 64512\n  peers:\n  - {address: 198.18.10.1, asn: 64500, holdTime: 65535s}\n",
		"bgp:\n  asn: 64512\n  routerID: 198.18.10.2\n  peers:\n  - {address: \"2001:db8:10::1\", asn: 64500}\n",
		"bgp:\n  maxPathsPerAddress: 255\n",
		"bgp:\n  onStop: GracefulRestart\n",
		"bgp:\n  maxPathsPerAddress: 1\n",
		"healthChecks:\n  interval: 30s\n", // httpInterval's default (10s) follows it
	} {
		if _, err := Parse([]byte(header + pools + ok)); err != nil {
			t.Errorf("refused %q: %v", ok, err)
		}
	}
}

func TestBGPDefaults(t *testing.T) {
	c, err := Parse([]byte(header + "bgp:\n  asn: 64512\n  peers:\n  - {address: 198.18.10.1, asn: 64500}\nloadBalancer:\n  pools:\n  - {name: p, addresses: [198.18.100.0/24]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := c.BGP.Peers[0]
	if p.Port != 179 || p.HoldTime.Duration != DefaultHoldTime || !*p.GracefulRestart.Enabled || p.GracefulRestart.RestartTime.Duration != DefaultRestartTime {
		t.Errorf("peer defaults: %+v %+v", p, *p.GracefulRestart)
	}
	if p.BFD != nil {
		t.Errorf("BFD on by default: %+v", *p.BFD)
	}
	if !*c.LoadBalancer.Pools[0].AutoAssign {
		t.Error("autoAssign default is not true")
	}
	c, err = Parse([]byte(header + "bgp:\n  asn: 64512\n  peers:\n  - {address: 198.18.10.1, asn: 64500, bfd: {transmitInterval: 1s}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := BFD{ReceiveInterval: metav1.Duration{Duration: 300 * time.Millisecond}, TransmitInterval: metav1.Duration{Duration: time.Second}, Multiplier: 3}
	if b := c.BGP.Peers[0].BFD; b == nil || *b != want {
		t.Errorf("BFD defaults: %+v, want %+v", b, want)
	}
}

func TestRoutesValidation(t *testing.T) {
	_, err := Parse([]byte(header + `routes:
  enabled: true
  nextHopAddressType: Hostname
  clusterCIDRs: [198.19.0.1/16]
`))
	if err == nil {
		t.Fatal("accepted")
	}
	for _, w := range []string{
		`routes.nextHopAddressType: Unsupported value: "Hostname"`,
		`routes.clusterCIDRs[0]: Invalid value: "198.19.0.1/16"`,
		`bgp.peers: Required value: routes.enabled needs at least one BGP peer`,
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q:\n%v", w, err)
		}
	}
	_, err = Parse([]byte(header + `routes: {enabled: true}
bgp:
  asn: 64512
  peers:
  - {address: 198.18.10.1, asn: 64500, podRoutes: false}
`))
	if err == nil || !strings.Contains(err.Error(), "routes.clusterCIDRs: Required value") {
		t.Errorf("podRoutes false without clusterCIDRs: %v", err)
	}
}

// sameDocument compares two configs as documents: the parsed values that
// validation keeps beside the fields are derived from them.
func sameDocument(t testing.TB, a, b *CloudConfig) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(ja) == string(jb)
}

// TestParsedValues checks that validation keeps what it parsed, for the
// provider to use as it is.
func TestParsedValues(t *testing.T) {
	cfg, err := Parse([]byte(`apiVersion: metal-ccm.io/v1alpha1
kind: CloudConfig
nodes:
  topology:
  - {subnet: 198.18.1.0/24, zone: z1}
loadBalancer:
  pools:
  - name: default
    addresses: [198.18.100.0/30, "2001:db8:100::1-2001:db8:100::2"]
    serviceSelector: {matchLabels: {tier: web}}
  - name: other
    addresses: [198.18.101.1/32]
bgp:
  asn: 64512
  routerID: 198.18.10.2
  peers:
  - {address: 198.18.10.1, asn: 64500, localAddress: 198.18.10.2}
  - {address: "2001:db8:10::1", asn: 64500}
routes:
  clusterCIDRs: [198.18.128.0/17]
`))
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, got, want any) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	check("topology[0] prefix", cfg.Nodes.Topology[0].Prefix(), netip.MustParsePrefix("198.18.1.0/24"))
	pools := cfg.LoadBalancer.Pools
	check("pools[0] ranges", len(pools[0].Ranges()), 2)
	check("pools[0] selector", pools[0].Selector(), "tier=web")
	check("pools[1] selector", pools[1].Selector().Empty(), true)
	check("routerID", cfg.BGP.RouterIDAddr(), netip.MustParseAddr("198.18.10.2"))
	check("peers[0] address", cfg.BGP.Peers[0].Addr(), netip.MustParseAddr("198.18.10.1"))
	check("peers[0] local address", cfg.BGP.Peers[0].LocalAddr(), netip.MustParseAddr("198.18.10.2"))
	check("peers[1] address", cfg.BGP.Peers[1].Addr(), netip.MustParseAddr("2001:db8:10::1"))
	check("peers[1] local address set", cfg.BGP.Peers[1].LocalAddr().IsValid(), false)
	check("cluster CIDRs", cfg.Routes.ClusterPrefixes(), []netip.Prefix{netip.MustParsePrefix("198.18.128.0/17")})
}

func TestPoolProtocols(t *testing.T) {
	c, err := Parse([]byte(header + `loadBalancer:
  pools:
  - {name: default, addresses: [198.18.0.0/24]}
  - {name: l2, addresses: [198.18.1.0/24], announce: [L2]}
  - {name: both, addresses: [198.18.2.0/24], announce: [L2, BGP]}
l2:
  nodeSelector: {matchLabels: {l2: "yes"}}
  secretFile: /etc/metal-ccm/l2/key
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		pool    int
		bgp, l2 bool
	}{{0, true, false}, {1, false, true}, {2, true, true}} {
		p := &c.LoadBalancer.Pools[tc.pool]
		t.Run(p.Name, func(t *testing.T) {
			if got := p.Announces(ProtocolBGP); got != tc.bgp {
				t.Errorf("Announces(BGP) = %v, want %v", got, tc.bgp)
			}
			if got := p.Announces(ProtocolL2); got != tc.l2 {
				t.Errorf("Announces(L2) = %v, want %v", got, tc.l2)
			}
		})
	}
	for _, tc := range []struct {
		addr    string
		bgp, l2 bool
	}{{"198.18.0.9", true, false}, {"198.18.1.9", false, true}, {"198.18.2.9", true, true},
		// In no pool: announced by nothing, whoever wrote it into a status.
		{"198.18.9.9", false, false}} {
		a := netip.MustParseAddr(tc.addr)
		if c.LoadBalancer.Announces(a, ProtocolBGP) != tc.bgp || c.LoadBalancer.Announces(a, ProtocolL2) != tc.l2 {
			t.Errorf("%s: announced with BGP %v, L2 %v; want %v, %v", a, c.LoadBalancer.Announces(a, ProtocolBGP),
				c.LoadBalancer.Announces(a, ProtocolL2), tc.bgp, tc.l2)
		}
	}
	for _, tc := range []struct {
		prefix  string
		bgp, l2 bool
	}{{"198.18.1.128/25", false, true}, {"198.18.0.0/23", true, true}, {"198.18.0.0/16", true, true}, {"198.18.0.7/32", true, false},
		{"198.18.3.0/24", false, false}, {"2001:db8::/32", false, false}, {"198.18.1.77/24", false, true}} {
		p := netip.MustParsePrefix(tc.prefix)
		if c.LoadBalancer.PoolsOverlap(p, ProtocolBGP) != tc.bgp || c.LoadBalancer.PoolsOverlap(p, ProtocolL2) != tc.l2 {
			t.Errorf("%s: overlaps a pool of BGP %v, L2 %v; want %v, %v", p, c.LoadBalancer.PoolsOverlap(p, ProtocolBGP),
				c.LoadBalancer.PoolsOverlap(p, ProtocolL2), tc.bgp, tc.l2)
		}
	}
	if !c.LoadBalancer.HasProtocol(ProtocolL2) {
		t.Error("HasProtocol(L2) = false with an L2 pool")
	}
	if !c.L2.Selects(labels.Set{"l2": "yes"}) || c.L2.Selects(labels.Set{"l2": "no"}) {
		t.Error("l2.nodeSelector does not select as written")
	}
	if c.L2.MemberlistPort != DefaultMemberlistPort {
		t.Errorf("l2.memberlistPort = %d, want the default %d", c.L2.MemberlistPort, DefaultMemberlistPort)
	}
	if c.L2.Failback != FailbackRebalance {
		t.Errorf("l2.failback = %q, want the default %q", c.L2.Failback, FailbackRebalance)
	}
}

func TestAnnounceFromNodes(t *testing.T) {
	cfg, err := Parse([]byte(header + `bgp:
  asn: 64512
  announceFrom: Nodes
  nodeASNLabel: metal-ccm.io/asn
  peers:
  - {address: 198.18.1.1, asn: 64500, nodeSelector: {matchLabels: {topology.kubernetes.io/zone: rack1}}, ebgpMultihop: 2}
  - {address: 198.18.2.1, asn: 64500, podRoutes: false}
routes:
  enabled: true
  clusterCIDRs: [198.19.0.0/16]
`))
	if err != nil {
		t.Fatal(err)
	}
	// The agents announce their own pod CIDRs: routes.enabled is accepted.
	if !cfg.Routes.Enabled {
		t.Error("routes.enabled lost")
	}
	rack1 := labels.Set{"topology.kubernetes.io/zone": "rack1"}
	rack2 := labels.Set{"topology.kubernetes.io/zone": "rack2"}
	if p := &cfg.BGP.Peers[0]; !p.Selects(rack1) || p.Selects(rack2) || p.EBGPMultihop != 2 {
		t.Errorf("peer 0 selects rack1 %v, rack2 %v, multihop %d; want true, false, 2", p.Selects(rack1), p.Selects(rack2), p.EBGPMultihop)
	}
	if p := &cfg.BGP.Peers[1]; !p.Selects(rack1) || !p.Selects(rack2) {
		t.Error("a peer without nodeSelector does not select every node")
	}
}

func TestLoadBalancerClass(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		want    lbrule.Rule
		wantErr []string // each must appear in the error text; none: valid
	}{
		{name: "none: the Services without a class", in: "", want: lbrule.Rule{}},
		{name: "a class", in: "  class: metal-ccm.io/bgp\n", want: lbrule.Rule{Class: "metal-ccm.io/bgp"}},
		{name: "an unprefixed class", in: "  class: internal-vip\n", want: lbrule.Rule{Class: "internal-vip"}},
		{name: "a class and the default one", in: "  class: metal-ccm.io/bgp\n  serveDefaultClass: true\n",
			want: lbrule.Rule{Class: "metal-ccm.io/bgp", ServeDefault: true}},
		{name: "serveDefaultClass false without a class", in: "  serveDefaultClass: false\n", want: lbrule.Rule{}},
		{name: "not a qualified name", in: "  class: metal-ccm.io/bgp/v1\n",
			wantErr: []string{`loadBalancer.class: Invalid value: "metal-ccm.io/bgp/v1": a valid label key must consist of`}},
		{name: "upper-case prefix", in: "  class: Metal-CCM.io/bgp\n",
			wantErr: []string{`loadBalancer.class: Invalid value: "Metal-CCM.io/bgp": prefix part a lowercase RFC 1123 subdomain`}},
		{name: "name too long", in: "  class: example.com/" + strings.Repeat("a", 64) + "\n",
			wantErr: []string{`loadBalancer.class: Invalid value: "example.com/aaaa`, `name part must be no more than 63 bytes`}},
		{name: "serveDefaultClass without a class", in: "  serveDefaultClass: true\n",
			wantErr: []string{`loadBalancer.serveDefaultClass: Invalid value: true: needs loadBalancer.class`}},
		{name: "both wrong, both named", in: "  class: -bad-\n  serveDefaultClass: true\n",
			wantErr: []string{`loadBalancer.class: Invalid value: "-bad-"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse([]byte(header + "loadBalancer:\n  pools:\n  - {name: p, addresses: [198.18.100.0/24]}\n" + tc.in))
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				if got := cfg.LoadBalancer.Rule(); got != tc.want {
					t.Errorf("Rule = %+v, want %+v", got, tc.want)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse = %v, want an error wrapping ErrInvalid", err)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestFencingMaxShare(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		ok   bool
	}{
		{"", 0, true}, {"1%", 1, true}, {"40%", 40, true}, {"100%", 100, true},
		{"0%", 0, false}, {"101%", 0, false}, {"40", 0, false}, {"a%", 0, false}, {"-5%", 0, false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := Fencing{MaxShare: tc.in}.MaxSharePercent()
			if got != tc.want || (err == nil) != tc.ok {
				t.Errorf("MaxSharePercent(%q) = %d, %v; want %d, ok %v", tc.in, got, err, tc.want, tc.ok)
			}
		})
	}
}

func TestOutOfServiceDeletePodsDefault(t *testing.T) {
	for _, tc := range []struct {
		name, outOfService string
		want               bool
	}{
		{"neither", "{enabled: true}", false},
		{"fast path", "{enabled: true, fastPath: true}", true},
		{"fast path, pods left to Kubernetes", "{enabled: true, fastPath: true, deletePods: false}", false},
		{"no fast path, pods deleted", "{enabled: true, deletePods: true}", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse([]byte(header + "nodes:\n  powerState:\n    source: ipmi\n    outOfService: " + tc.outOfService + "\n"))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if d := got.Nodes.PowerState.OutOfService.DeletePods; d == nil || *d != tc.want {
				t.Errorf("deletePods = %v, want %t", d, tc.want)
			}
		})
	}
}
