package metal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/powerstate"
)

const testConfig = `apiVersion: metal-ccm.io/v1alpha1
kind: CloudConfig
nodes:
  inventory:
  - name: a
    id: srv-a
    addresses: [{type: InternalIP, address: 198.18.1.10}]
    zone: own-zone
    labels: {metal-ccm.io/rack: r1}
  - name: b
  topology:
  - {subnet: 198.18.1.0/24, region: dc1, zone: z1}
  - {subnet: "2001:db8:2::/64", region: dc2, zone: z2}
`

func newTestCloud(t *testing.T, doc string) (*Cloud, *record.FakeRecorder) {
	t.Helper()
	cfg, err := config.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rec := record.NewFakeRecorder(10)
	var r record.EventRecorder = rec
	c.recorder.Store(&r)
	return c, rec
}

func node(name, providerID, providedIPs string, taint bool) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{ProviderID: providerID}}
	if providedIPs != "" {
		n.Annotations = map[string]string{cloudproviderapi.AnnotationAlphaProvidedIPAddr: providedIPs}
	}
	if taint {
		n.Spec.Taints = []v1.Taint{{Key: cloudproviderapi.TaintExternalCloudProvider, Effect: v1.TaintEffectNoSchedule}}
	}
	return n
}

func TestInstanceMetadata(t *testing.T) {
	c, _ := newTestCloud(t, testConfig)
	for _, tc := range []struct {
		name                                   string
		node                                   *v1.Node
		providerID, instanceType, region, zone string
		addrs                                  []v1.NodeAddress
		labels                                 map[string]string
	}{
		{
			name: "inventory machine with own addresses and zone", node: node("a", "", "198.18.9.9", true),
			providerID: "metal://inventory/srv-a", instanceType: "metal", region: "dc1", zone: "own-zone",
			addrs:  []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "198.18.1.10"}},
			labels: map[string]string{"metal-ccm.io/rack": "r1"},
		},
		{
			name: "inventory machine found by its providerID id", node: node("renamed", "metal://inventory/srv-a", "", false),
			providerID: "metal://inventory/srv-a", instanceType: "metal", region: "dc1", zone: "own-zone",
			addrs:  []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "198.18.1.10"}},
			labels: map[string]string{"metal-ccm.io/rack": "r1"},
		},
		{
			name: "inventory machine without addresses uses the provided IP", node: node("b", "", "2001:db8:2::5", true),
			providerID: "metal://inventory/b", instanceType: "metal", region: "dc2", zone: "z2",
			addrs: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "2001:db8:2::5"}, {Type: v1.NodeHostName, Address: "b"}},
		},
		{
			name: "discovered dual-stack node, topology from its first IP", node: node("c", "", "198.18.1.7, 2001:db8:2::7", true),
			providerID: "metal://discovered/c", instanceType: "metal", region: "dc1", zone: "z1",
			addrs: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "198.18.1.7"}, {Type: v1.NodeInternalIP, Address: "2001:db8:2::7"}, {Type: v1.NodeHostName, Address: "c"}},
		},
		{
			name: "discovered node outside every subnet", node: node("d", "", "198.19.0.1", true),
			providerID: "metal://discovered/d", instanceType: "metal",
			addrs: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "198.19.0.1"}, {Type: v1.NodeHostName, Address: "d"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md, err := c.InstanceMetadata(context.Background(), tc.node)
			if err != nil {
				t.Fatal(err)
			}
			if md.ProviderID != tc.providerID || md.InstanceType != tc.instanceType || md.Region != tc.region || md.Zone != tc.zone {
				t.Errorf("got %q %q %q %q, want %q %q %q %q", md.ProviderID, md.InstanceType, md.Region, md.Zone,
					tc.providerID, tc.instanceType, tc.region, tc.zone)
			}
			if !slices.Equal(md.NodeAddresses, tc.addrs) {
				t.Errorf("addresses %v, want %v", md.NodeAddresses, tc.addrs)
			}
			if len(md.AdditionalLabels) != len(tc.labels) {
				t.Errorf("labels %v, want %v", md.AdditionalLabels, tc.labels)
			}
			for k, v := range tc.labels {
				if md.AdditionalLabels[k] != v {
					t.Errorf("label %s = %q, want %q", k, md.AdditionalLabels[k], v)
				}
			}
		})
	}
}

func TestDiscoveryReject(t *testing.T) {
	c, rec := newTestCloud(t, strings.Replace(testConfig, "nodes:\n", "nodes:\n  discovery: {policy: Reject}\n", 1))
	md, err := c.InstanceMetadata(context.Background(), node("stranger", "", "198.18.1.50", true))
	if err != nil || md != nil {
		t.Fatalf("got %+v, %v; want nil metadata and no error", md, err)
	}
	select {
	case ev := <-rec.Events:
		if !strings.HasPrefix(ev, "Warning DiscoveryRejected ") {
			t.Errorf("event %q", ev)
		}
	default:
		t.Error("no event recorded")
	}
	// A node accepted before the policy changed keeps being described.
	md, err = c.InstanceMetadata(context.Background(), node("stranger", "metal://discovered/stranger", "198.18.1.50", false))
	if err != nil || md == nil || md.ProviderID != "metal://discovered/stranger" {
		t.Errorf("initialized node: got %+v, %v", md, err)
	}
}

func TestNodeWithoutAnyIP(t *testing.T) {
	c, rec := newTestCloud(t, testConfig)
	_, err := c.InstanceMetadata(context.Background(), node("ghost", "", "", true))
	if !errors.Is(err, ErrNodeIPUnknown) {
		t.Fatalf("err = %v, want ErrNodeIPUnknown", err)
	}
	if ev := <-rec.Events; !strings.HasPrefix(ev, "Warning NodeIPUnknown ") {
		t.Errorf("event %q", ev)
	}
}

func TestInstanceExists(t *testing.T) {
	c, _ := newTestCloud(t, testConfig)
	for _, tc := range []struct {
		name string
		node *v1.Node
		want bool
	}{
		{"in inventory by name", node("b", "metal://inventory/b", "", false), true},
		{"in inventory by id", node("x", "metal://inventory/srv-a", "", false), true},
		{"removed from inventory", node("old", "metal://inventory/old", "", false), false},
		{"id changed but name still listed", node("b", "metal://inventory/b-old", "", false), true},
		{"discovered", node("c", "metal://discovered/c", "", false), true},
		{"never initialized", node("new", "", "", true), true},
		{"another provider's node", node("f", "other://x/y", "", false), true},
		{"malformed metal providerID", node("m", "metal://nowhere", "", false), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := c.InstanceExists(context.Background(), tc.node)
			if err != nil || got != tc.want {
				t.Errorf("InstanceExists = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

type fakePower struct{ off map[string]bool }

func (f fakePower) Close() error { return nil }

func (f fakePower) Shutdown(_ context.Context, m powerstate.Machine) (bool, error) {
	if m.Node.Name == "a" && (m.ID != "srv-a" || string(m.Settings) != `{"bmc":"198.18.30.1"}`) {
		return false, fmt.Errorf("machine a asked with id %q and settings %s", m.ID, m.Settings)
	}
	off, known := f.off[m.Node.Name]
	if !known {
		return false, errors.New("unknown machine")
	}
	return off, nil
}

func TestInstanceShutdown(t *testing.T) {
	powerstate.Register("test-fake", func(settings json.RawMessage, _ powerstate.Env) (powerstate.Source, error) {
		if string(settings) != `{"endpoint":"198.18.30.2"}` {
			return nil, fmt.Errorf("settings %s", settings)
		}
		return fakePower{off: map[string]bool{"a": true, "b": false}}, nil
	})
	doc := strings.Replace(testConfig, "    labels: {metal-ccm.io/rack: r1}\n",
		"    labels: {metal-ccm.io/rack: r1}\n    powerState: {bmc: 198.18.30.1}\n", 1)
	c, rec := newTestCloud(t, doc+"  powerState: {source: test-fake, settings: {endpoint: 198.18.30.2}}\n")
	for name, want := range map[string]bool{"a": true, "b": false} {
		if got, err := c.InstanceShutdown(context.Background(), node(name, "", "", false)); err != nil || got != want {
			t.Errorf("%s: InstanceShutdown = %v, %v; want %v", name, got, err, want)
		}
	}
	if _, err := c.InstanceShutdown(context.Background(), node("zz", "", "", false)); err == nil {
		t.Error("a source error was not returned")
	}
	// One Event per changed conclusion: a's Off and zz's error; b's first On
	// is no news, and asking again records nothing.
	_, _ = c.InstanceShutdown(context.Background(), node("a", "", "", false))
	var got []string
	for len(rec.Events) > 0 {
		e := <-rec.Events
		got = append(got, strings.Fields(e)[1])
	}
	slices.Sort(got)
	if want := []string{ReasonPowerStateUnknown, ReasonPoweredOff}; !slices.Equal(got, want) {
		t.Errorf("Events %v, want %v", got, want)
	}
	// An unknown source is refused, naming the field.
	if _, err := config.Parse([]byte(testConfig + "  powerState: {source: ipmi-nowhere}\n")); err != nil {
		t.Fatalf("the config's own validation leaves the source name to the provider: %v", err)
	}
	cfg, _ := config.Parse([]byte(testConfig + "  powerState: {source: ipmi-nowhere}\n"))
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), `nodes.powerState.source: Unsupported value: "ipmi-nowhere"`) {
		t.Errorf("New with an unknown source: %v", err)
	}
	// The default source never reports a shutdown.
	d, _ := newTestCloud(t, testConfig)
	if got, err := d.InstanceShutdown(context.Background(), node("a", "", "", false)); got || err != nil {
		t.Errorf("default source: %v, %v", got, err)
	}
}

func TestProviderIDRoundTrip(t *testing.T) {
	for _, s := range []string{"metal://inventory/srv-1.rack2", "metal://discovered/node-7"} {
		p, err := parseProviderID(s)
		if err != nil || p.String() != s {
			t.Errorf("%s: got %v, %v", s, p, err)
		}
	}
	for _, s := range []string{"", "metal://", "metal://inventory/", "metal://elsewhere/x", "gce://p/z/i"} {
		if _, err := parseProviderID(s); !errors.Is(err, ErrForeignProviderID) {
			t.Errorf("%q: err = %v", s, err)
		}
	}
}

// TestFencingNeedsAFencer: fencing with a source that cannot power machines
// off is refused, naming the field; with one that can, accepted.
func TestFencingNeedsAFencer(t *testing.T) {
	for _, tc := range []struct{ source, want string }{
		{"metal3", `nodes.powerState.fencing.enabled: Invalid value: true: power-state source metal3 cannot power machines off`},
		{"rufio", `nodes.powerState.fencing.enabled: Invalid value: true: power-state source rufio cannot power machines off`},
		{"ipmi", ""},
		{"redfish", ""},
	} {
		t.Run(tc.source, func(t *testing.T) {
			cfg, err := config.Parse([]byte(testConfig + "  powerState: {source: " + tc.source + ", fencing: {enabled: true}}\n"))
			if err != nil {
				t.Fatal(err)
			}
			_, err = New(cfg)
			if tc.want == "" && err != nil {
				t.Errorf("New: %v", err)
			}
			if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("New = %v; want %q", err, tc.want)
			}
		})
	}
}
