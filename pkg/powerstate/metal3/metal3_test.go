package metal3

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/metal-ccm/metal-ccm/pkg/powerstate"
	"github.com/metal-ccm/metal-ccm/pkg/powerstate/internal/objcache"
)

// bmh is a BareMetalHost as the baremetal-operator writes it; a nil
// poweredOn leaves the field out.
func bmh(ns, name, state string, poweredOn *bool) *unstructured.Unstructured {
	status := map[string]any{"provisioning": map[string]any{"state": state}}
	if poweredOn != nil {
		status["poweredOn"] = *poweredOn
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "metal3.io/v1alpha1", "kind": "BareMetalHost",
		"metadata": map[string]any{"namespace": ns, "name": name},
		"status":   status,
	}}
}

func node(name, providerID string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{ProviderID: providerID}}
}

// newSynced builds the source on a fake cluster holding objs and waits
// until its cache has listed them.
func newSynced(t *testing.T, settings string, objs ...runtime.Object) *Source {
	t.Helper()
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{GVR: "BareMetalHostList"}, objs...)
	s, err := New(json.RawMessage(settings), powerstate.Env{Dynamic: client, Context: t.Context()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	src := s.(*Source)
	if !src.cache.WaitForSync(t.Context()) {
		t.Fatal("the cache did not sync")
	}
	return src
}

func TestPoweredOff(t *testing.T) {
	on, off := true, false
	for _, tc := range []struct {
		name    string
		host    *unstructured.Unstructured
		wantOff bool
		wantErr error
	}{
		{"provisioned, off", bmh("m3", "h", StateProvisioned, &off), true, nil},
		{"provisioned, on", bmh("m3", "h", StateProvisioned, &on), false, nil},
		{"externally provisioned, off", bmh("m3", "h", StateExternallyProvisioned, &off), true, nil},
		{"provisioned, poweredOn missing", bmh("m3", "h", StateProvisioned, nil), false, ErrNoPowerState},
		{"inspecting, off", bmh("m3", "h", "inspecting", &off), false, ErrNotProvisioned},
		{"no state, off", bmh("m3", "h", "", &off), false, ErrNotProvisioned},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := PoweredOff(tc.host)
			if got != tc.wantOff || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Errorf("PoweredOff = %v, %v; want %v, %v", got, err, tc.wantOff, tc.wantErr)
			}
		})
	}
}

func TestHostOf(t *testing.T) {
	for _, tc := range []struct {
		name, settings, machine, providerID string
		want                                string
		byProviderID                        bool
		wantErr                             error
	}{
		{name: "by settings", settings: `{"namespace": "m3"}`, machine: `{"name": "h1"}`, want: "m3/h1"},
		{name: "by settings, own namespace", machine: `{"namespace": "a", "name": "h1"}`, want: "a/h1"},
		{name: "settings win over providerID", machine: `{"namespace": "a", "name": "h1"}`, providerID: "metal3://b/h2/m", want: "a/h1"},
		{name: "by providerID", providerID: "metal3://b/h2/m2", want: "b/h2", byProviderID: true},
		{name: "by node name", settings: `{"namespace": "m3"}`, want: "m3/node-a"},
		{name: "legacy UID providerID", settings: `{"namespace": "m3"}`, providerID: "metal3://6f1c1e3a-0000-4000-8000-000000000001", want: "m3/node-a"},
		{name: "foreign providerID", providerID: "metal://inventory/a", wantErr: ErrNoHost},
		{name: "nothing", wantErr: ErrNoHost},
		{name: "settings name without namespace", machine: `{"name": "h1"}`, wantErr: objcache.ErrBadSettings},
		{name: "outside the watched namespace", settings: `{"namespace": "m3"}`, providerID: "metal3://b/h2/m2", wantErr: objcache.ErrBadSettings},
		{name: "unknown field", machine: `{"host": "h1"}`, wantErr: objcache.ErrBadSettings},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(json.RawMessage(tc.settings), powerstate.Env{})
			if err != nil {
				t.Fatal(err)
			}
			var raw json.RawMessage
			if tc.machine != "" {
				raw = json.RawMessage(tc.machine)
			}
			h, err := s.(*Source).hostOf(powerstate.Machine{Node: node("node-a", tc.providerID), Settings: raw})
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("hostOf = %v, %v; want error %v", h, err, tc.wantErr)
			}
			if err == nil && (h.String() != tc.want || h.byProviderID != tc.byProviderID) {
				t.Errorf("hostOf = %s (by providerID %v); want %s (%v)", h, h.byProviderID, tc.want, tc.byProviderID)
			}
		})
	}
	if _, err := New(json.RawMessage(`{"namespaces": ["m3"]}`), powerstate.Env{}); !errors.Is(err, objcache.ErrBadSettings) || !strings.Contains(err.Error(), "namespaces") {
		t.Errorf("New with an unknown setting: %v", err)
	}
}

// TestFromTheCache asks a source whose cache holds the hosts of a fake
// cluster: the evidence of each, and Exists only for the hosts it can name.
func TestFromTheCache(t *testing.T) {
	on, off := true, false
	s := newSynced(t, `{"namespace": "m3"}`,
		bmh("m3", "node-off", StateProvisioned, &off), bmh("m3", "node-on", StateProvisioned, &on),
		bmh("m3", "node-ready", "ready", &off), bmh("other", "node-x", StateProvisioned, &off))
	for _, tc := range []struct {
		node, providerID string
		wantOff          bool
		wantErr          error
		wantExists       bool
		existsErr        bool
	}{
		{node: "node-off", wantOff: true, wantExists: true},
		{node: "node-on", wantExists: true},
		{node: "node-ready", wantErr: ErrNotProvisioned, wantExists: true},
		// Named like its Node but never seen: a missing host, not a gone one.
		{node: "node-missing", wantErr: objcache.ErrNotFound, wantExists: true, existsErr: true},
		// Named by its providerID: a missing host is a gone machine.
		{node: "node-pid", providerID: "metal3://m3/gone/m3m", wantErr: objcache.ErrNotFound, wantExists: false},
	} {
		t.Run(tc.node, func(t *testing.T) {
			m := powerstate.Machine{Node: node(tc.node, tc.providerID)}
			off, err := s.Shutdown(t.Context(), m)
			if off != tc.wantOff || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Errorf("Shutdown = %v, %v; want %v, %v", off, err, tc.wantOff, tc.wantErr)
			}
			exists, err := s.Exists(t.Context(), m)
			if exists != tc.wantExists || (err != nil) != tc.existsErr {
				t.Errorf("Exists = %v, %v; want %v (error %v)", exists, err, tc.wantExists, tc.existsErr)
			}
		})
	}
}

// TestWithoutACluster: built before the replica leads, the source answers
// ErrNoCluster, never off and never gone.
func TestWithoutACluster(t *testing.T) {
	s, err := New(json.RawMessage(`{"namespace": "m3"}`), powerstate.Env{})
	if err != nil {
		t.Fatal(err)
	}
	m := powerstate.Machine{Node: node("node-a", "metal3://m3/node-a/m")}
	if off, err := s.Shutdown(t.Context(), m); off || !errors.Is(err, powerstate.ErrNoCluster) {
		t.Errorf("Shutdown = %v, %v; want ErrNoCluster", off, err)
	}
	if exists, err := s.(powerstate.Existence).Exists(t.Context(), m); !exists || !errors.Is(err, powerstate.ErrNoCluster) {
		t.Errorf("Exists = %v, %v; want true, ErrNoCluster", exists, err)
	}
}
