package rufio

import (
	"encoding/json"
	"errors"
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

// machine is a Rufio Machine as Rufio writes it; "" leaves powerState out.
func machine(ns, name, power string) *unstructured.Unstructured {
	status := map[string]any{}
	if power != "" {
		status["powerState"] = power
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "bmc.tinkerbell.org/v1alpha1", "kind": "Machine",
		"metadata": map[string]any{"namespace": ns, "name": name},
		"status":   status,
	}}
}

func TestPoweredOff(t *testing.T) {
	for _, tc := range []struct {
		power   string
		wantOff bool
		wantErr error
	}{
		{PowerOff, true, nil},
		{PowerOn, false, nil},
		{"unknown", false, ErrUnknownPower},
		{"", false, ErrUnknownPower},
		{"Off", false, ErrUnknownPower}, // Rufio writes lower case; anything else is not its word
	} {
		t.Run("powerState="+tc.power, func(t *testing.T) {
			off, _, err := PoweredOff(machine("tink", "m", tc.power))
			if off != tc.wantOff || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Errorf("PoweredOff = %v, %v; want %v, %v", off, err, tc.wantOff, tc.wantErr)
			}
		})
	}
}

// TestFromTheCache asks a source whose cache holds the Machines of a fake
// cluster, found by settings or by the Node's name.
func TestFromTheCache(t *testing.T) {
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{GVR: "MachineList"},
		machine("tink", "node-off", PowerOff), machine("tink", "node-on", PowerOn),
		machine("tink", "node-unknown", "unknown"), machine("tink", "bmc-7", PowerOff))
	s, err := New(json.RawMessage(`{"namespace": "tink"}`), powerstate.Env{Dynamic: client, Context: t.Context()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if !s.(*Source).cache.WaitForSync(t.Context()) {
		t.Fatal("the cache did not sync")
	}
	for _, tc := range []struct {
		node, settings string
		wantOff        bool
		wantErr        error
	}{
		{node: "node-off", wantOff: true},
		{node: "node-on"},
		{node: "node-unknown", wantErr: ErrUnknownPower},
		{node: "node-missing", wantErr: objcache.ErrNotFound},
		{node: "node-b", settings: `{"name": "bmc-7"}`, wantOff: true},
		{node: "node-c", settings: `{"namespace": "elsewhere", "name": "bmc-7"}`, wantErr: objcache.ErrBadSettings},
	} {
		t.Run(tc.node, func(t *testing.T) {
			m := powerstate.Machine{Node: &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: tc.node}}}
			if tc.settings != "" {
				m.Settings = json.RawMessage(tc.settings)
			}
			off, err := s.Shutdown(t.Context(), m)
			if off != tc.wantOff || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Errorf("Shutdown = %v, %v; want %v, %v", off, err, tc.wantOff, tc.wantErr)
			}
		})
	}
	// Without a namespace setting, a Machine must be named with its own.
	bare, err := New(nil, powerstate.Env{})
	if err != nil {
		t.Fatal(err)
	}
	if off, err := bare.Shutdown(t.Context(), powerstate.Machine{Node: &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}}); off || !errors.Is(err, ErrNoMachine) {
		t.Errorf("without a namespace: Shutdown = %v, %v; want ErrNoMachine", off, err)
	}
}
