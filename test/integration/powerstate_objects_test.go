package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/metal-ccm/metal-ccm/pkg/metal"
	"github.com/metal-ccm/metal-ccm/pkg/powerstate/metal3"
	"github.com/metal-ccm/metal-ccm/pkg/powerstate/rufio"
	"github.com/metal-ccm/metal-ccm/test/framework"
)

// TestMetal3HostPowerState runs the metal3 source against BareMetalHosts in
// the real API server (their CRD installed from the published API's names),
// written as the baremetal-operator writes them, status through the status
// subresource. Three NotReady nodes: the one whose provisioned host says
// poweredOn false gets the shutdown taint and a PoweredOff Event; the one
// whose host is still provisioning gets PowerStateUnknown and no taint,
// though its host is off too; the one whose host is deleted is reported
// gone, and upstream deletes it. A fourth, with no host at all, is kept.
func TestMetal3HostPowerState(t *testing.T) {
	cp.InstallCRD(t, framework.BareMetalHostCRD, "baremetalhosts.metal3.io")
	ns := framework.NewNamespace(t, client, "metal3-hosts")
	dyn := dynamicClient(t)
	writeObject(t, dyn, metal3.GVR, ns, "m3-off", "BareMetalHost", map[string]any{"provisioning": map[string]any{"state": "provisioned"}, "poweredOn": false})
	writeObject(t, dyn, metal3.GVR, ns, "m3-provisioning", "BareMetalHost", map[string]any{"provisioning": map[string]any{"state": "provisioning"}, "poweredOn": false})
	writeObject(t, dyn, metal3.GVR, ns, "m3-gone", "BareMetalHost", map[string]any{"provisioning": map[string]any{"state": "externally provisioned"}, "poweredOn": true})
	cfg := writeConfig(t, fmt.Sprintf(`nodes:
  powerState: {source: metal3, settings: {namespace: %s}}
  inventory:
  - {name: m3-off, addresses: [{type: InternalIP, address: 198.18.3.30}]}
  - {name: m3-provisioning, addresses: [{type: InternalIP, address: 198.18.3.31}]}
  - {name: m3-gone, addresses: [{type: InternalIP, address: 198.18.3.32}]}
  - {name: m3-nohost, addresses: [{type: InternalIP, address: 198.18.3.33}]}
`, ns))
	startCCM(t, framework.CCMOptions{CloudConfig: cfg})
	nodes := map[string]string{"m3-off": "198.18.3.30", "m3-provisioning": "198.18.3.31", "m3-gone": "198.18.3.32", "m3-nohost": "198.18.3.33"}
	for name, ip := range nodes {
		registerNode(t, name, false, ip)
	}
	for name := range nodes {
		waitInitialized(t, name, 30*time.Second)
	}
	waitNodeTaint(t, "m3-off", shutdownTaint, 30*time.Second)
	framework.WaitObjectEvent(t, client, metav1.NamespaceAll, "m3-off", metal.ReasonPoweredOff, 10*time.Second)
	framework.WaitObjectEvent(t, client, metav1.NamespaceAll, "m3-provisioning", metal.ReasonPowerStateUnknown, 10*time.Second)
	framework.WaitObjectEvent(t, client, metav1.NamespaceAll, "m3-nohost", metal.ReasonPowerStateUnknown, 10*time.Second)
	noShutdownTaint(t, "m3-provisioning")

	// The source has seen m3-gone's host (the taint above says its cache
	// synced); deleted, the host is evidence that the machine is gone.
	if err := dyn.Resource(metal3.GVR).Namespace(ns).Delete(t.Context(), "m3-gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitNodeDeleted(t, "m3-gone", 30*time.Second)
	// A few more node monitor periods: the others stay.
	time.Sleep(3 * time.Second)
	for _, name := range []string{"m3-off", "m3-provisioning", "m3-nohost"} {
		if _, err := client.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{}); err != nil {
			t.Errorf("node %s: %v; want it kept", name, err)
		}
	}
	noShutdownTaint(t, "m3-provisioning")
}

// TestRufioMachinePowerState runs the rufio source against Rufio Machines in
// the real API server, written as Rufio writes them: the NotReady node whose
// Machine says "off" gets the shutdown taint and a PoweredOff Event; the one
// whose Machine says "unknown" gets PowerStateUnknown and no taint.
func TestRufioMachinePowerState(t *testing.T) {
	cp.InstallCRD(t, framework.RufioMachineCRD, "machines.bmc.tinkerbell.org")
	ns := framework.NewNamespace(t, client, "rufio-machines")
	dyn := dynamicClient(t)
	writeObject(t, dyn, rufio.GVR, ns, "rf-off", "Machine", map[string]any{"powerState": "off"})
	writeObject(t, dyn, rufio.GVR, ns, "rf-unknown", "Machine", map[string]any{"powerState": "unknown"})
	cfg := writeConfig(t, fmt.Sprintf(`nodes:
  powerState: {source: rufio, settings: {namespace: %s}}
  inventory:
  - {name: rf-off, addresses: [{type: InternalIP, address: 198.18.3.40}]}
  - {name: rf-unknown, addresses: [{type: InternalIP, address: 198.18.3.41}]}
`, ns))
	startCCM(t, framework.CCMOptions{CloudConfig: cfg})
	registerNode(t, "rf-off", false, "198.18.3.40")
	registerNode(t, "rf-unknown", false, "198.18.3.41")
	waitInitialized(t, "rf-off", 30*time.Second)
	waitInitialized(t, "rf-unknown", 30*time.Second)
	waitNodeTaint(t, "rf-off", shutdownTaint, 30*time.Second)
	framework.WaitObjectEvent(t, client, metav1.NamespaceAll, "rf-off", metal.ReasonPoweredOff, 10*time.Second)
	framework.WaitObjectEvent(t, client, metav1.NamespaceAll, "rf-unknown", metal.ReasonPowerStateUnknown, 10*time.Second)
	noShutdownTaint(t, "rf-unknown")
}

func dynamicClient(t *testing.T) dynamic.Interface {
	t.Helper()
	rc, err := cp.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return dyn
}

// writeObject creates the object and then writes its status through the
// status subresource, as a controller does.
func writeObject(t *testing.T, dyn dynamic.Interface, gvr schema.GroupVersionResource, ns, name, kind string, status map[string]any) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": kind,
		"metadata": map[string]any{"namespace": ns, "name": name},
		"spec":     map[string]any{},
	}}
	created, err := dyn.Resource(gvr).Namespace(ns).Create(t.Context(), u, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Object["status"] = status
	if _, err := dyn.Resource(gvr).Namespace(ns).UpdateStatus(t.Context(), created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func noShutdownTaint(t *testing.T, name string) {
	t.Helper()
	n, err := client.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(n.Spec.Taints, func(tt v1.Taint) bool { return tt.Key == shutdownTaint }) {
		t.Errorf("node %s got the shutdown taint: %v", name, n.Spec.Taints)
	}
}

func waitNodeDeleted(t *testing.T, name string, timeout time.Duration) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("node %s not deleted within %s", name, timeout)
	}
}
