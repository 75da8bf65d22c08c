package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/metal-ccm/metal-ccm/test/framework"
)

// writeConfig writes a cloud-config for one test and returns its path.
func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "cloud-config.yaml")
	if err := os.WriteFile(p, []byte("apiVersion: metal-ccm.io/v1alpha1\nkind: CloudConfig\n"+body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// startCCM starts a replica with a lease of its test's own and stops it (by
// PID) when the test ends. Its log is printed when the test fails.
func startCCM(t *testing.T, o framework.CCMOptions) *framework.CCM {
	t.Helper()
	if o.Name == "" {
		o.Name = "ccm-" + strings.ToLower(t.Name())
	}
	lease := strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	o.Args = append([]string{"--leader-elect-resource-name", lease, "--node-monitor-period", "1s"}, o.Args...)
	return cp.StartCCMForTest(t, o)
}

// registerNode registers a node as a kubelet would and deletes it when the test ends.
func registerNode(t *testing.T, name string, ready bool, ips ...string) {
	t.Helper()
	ctx := context.Background()
	if _, err := framework.RegisterNode(ctx, client, name, ready, ips...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		err := client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete node %s: %v", name, err)
		}
	})
}

// waitInitialized waits until the node has lost the uninitialized taint.
func waitInitialized(t *testing.T, name string, timeout time.Duration) *v1.Node {
	t.Helper()
	var node *v1.Node
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // keep polling through transient errors
		}
		node = n
		return !framework.Uninitialized(n), nil
	})
	if err != nil {
		t.Fatalf("node %s not initialized within %s: %v (last seen: %+v)", name, timeout, err, node)
	}
	return node
}

// nodeEvents lists the Events recorded about a node.
func nodeEvents(ctx context.Context, t *testing.T, name string) []v1.Event {
	t.Helper()
	return objectEvents(ctx, t, "Node", metav1.NamespaceAll, name)
}

// objectEvents lists the Events recorded about the object of kind named
// name in namespace ns (metav1.NamespaceAll for a cluster-wide object).
func objectEvents(ctx context.Context, t *testing.T, kind, ns, name string) []v1.Event {
	t.Helper()
	evs, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
		FieldSelector: fields.Set{"involvedObject.kind": kind, "involvedObject.name": name}.String(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return evs.Items
}
