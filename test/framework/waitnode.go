package framework

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// WaitNode waits until the node satisfies ok, and returns it; the test
// fails with what the node last showed.
func WaitNode(t testing.TB, cs kubernetes.Interface, name string, timeout time.Duration, ok func(*v1.Node) bool) *v1.Node {
	t.Helper()
	var node *v1.Node
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		got, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // not registered yet
		}
		node = got
		return ok(got), nil
	})
	if err != nil {
		if node == nil {
			t.Fatalf("node %s: %v; never registered", name, err)
		}
		t.Fatalf("node %s: %v; last seen: taints %v, providerID %q, pod CIDRs %v, conditions %v",
			name, err, node.Spec.Taints, node.Spec.ProviderID, node.Spec.PodCIDRs, NodeConditions(node))
	}
	return node
}

// NodeConditions are a node's conditions, one "Type=Status (Reason)" each.
func NodeConditions(n *v1.Node) []string {
	var out []string
	for _, c := range n.Status.Conditions {
		out = append(out, fmt.Sprintf("%s=%s (%s)", c.Type, c.Status, c.Reason))
	}
	return out
}
