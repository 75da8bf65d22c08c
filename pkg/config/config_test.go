package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
)

const header = "apiVersion: metal-ccm.io/v1alpha1\nkind: CloudConfig\n"

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
				PowerState:          PowerState{Source: "none"},
			}},
		},
		{
			name: "machine id and instance type",
			in:   header + "nodes:\n  defaultInstanceType: small\n  inventory:\n  - name: n1\n  - name: n2\n    id: rack1-2\n    instanceType: big\n",
			want: CloudConfig{APIVersion: APIVersion, Kind: Kind, Nodes: Nodes{
				DefaultInstanceType: "small",
				Discovery:           Discovery{Policy: DiscoveryAccept},
				PowerState:          PowerState{Source: "none"},
				Inventory: []Machine{
					{Name: "n1", ID: "n1", InstanceType: "small"},
					{Name: "n2", ID: "rack1-2", InstanceType: "big"},
				},
			}},
		},
		{
			name: "explicit values are kept",
			in:   header + "nodes:\n  discovery:\n    policy: Reject\n  powerState:\n    source: none\n",
			want: CloudConfig{APIVersion: APIVersion, Kind: Kind, Nodes: Nodes{
				DefaultInstanceType: "metal",
				Discovery:           Discovery{Policy: DiscoveryReject},
				PowerState:          PowerState{Source: "none"},
			}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse([]byte(tc.in))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !equality.Semantic.DeepEqual(*got, tc.want) {
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
  powerState: {source: ipmi-nowhere}
  topology:
  - {subnet: 198.18.0.0/16, zone: a}
  - {subnet: 198.18.4.0/24, zone: b}
  - {subnet: 198.18.5.1/24, zone: c}
  - {subnet: not-a-cidr, zone: d}
  - {subnet: "2001:db8::/64"}
`,
			want: []string{
				`nodes.discovery.policy: Unsupported value: "Maybe"`,
				`nodes.powerState.source: Unsupported value: "ipmi-nowhere"`,
				`nodes.topology[1].subnet: Invalid value: "198.18.4.0/24": overlaps topology[0].subnet 198.18.0.0/16`,
				`nodes.topology[2].subnet: Invalid value: "198.18.5.1/24": parse CIDR "198.18.5.1/24": host bits are set, the network is 198.18.5.0/24`,
				`nodes.topology[3].subnet: Invalid value: "not-a-cidr"`,
				`nodes.topology[4]: Required value: a region, a zone or both`,
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

// TestExamples keeps every example config shipped in the repository valid.
func TestExamples(t *testing.T) {
	paths, err := filepath.Glob("../../hack/local/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	paths = append(paths, "testdata/full.yaml")
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
