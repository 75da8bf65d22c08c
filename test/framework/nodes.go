package framework

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	cloudproviderapi "k8s.io/cloud-provider/api"
)

// RegisterNode creates a Node the way a kubelet started with
// --cloud-provider=external and --node-ip does: with the uninitialized taint,
// the provided-node-ip annotation, the first IP and the hostname as addresses,
// and a Ready condition of the given status.
func RegisterNode(ctx context.Context, cs kubernetes.Interface, name string, ready bool, ips ...string) (*v1.Node, error) {
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				v1.LabelHostname: name, v1.LabelOSStable: "linux", v1.LabelArchStable: "amd64",
			},
		},
		Spec: v1.NodeSpec{Taints: []v1.Taint{{
			Key: cloudproviderapi.TaintExternalCloudProvider, Value: "true", Effect: v1.TaintEffectNoSchedule,
		}}},
	}
	if len(ips) > 0 {
		node.Annotations = map[string]string{cloudproviderapi.AnnotationAlphaProvidedIPAddr: strings.Join(ips, ",")}
	}
	addrs := []v1.NodeAddress{{Type: v1.NodeHostName, Address: name}}
	if len(ips) > 0 {
		addrs = append([]v1.NodeAddress{{Type: v1.NodeInternalIP, Address: ips[0]}}, addrs...)
	}
	updated, err := createNode(ctx, cs, node, addrs, ready)
	if err != nil {
		return nil, fmt.Errorf("register node %s: %w", name, err)
	}
	return updated, nil
}

// createNode creates node, then sets its addresses and Ready condition.
func createNode(ctx context.Context, cs kubernetes.Interface, node *v1.Node, addrs []v1.NodeAddress, ready bool) (*v1.Node, error) {
	if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	updated, err := updateStatus(ctx, cs, node.Name, func(n *v1.Node) {
		n.Status.Addresses = addrs
		setReady(n, ready)
	})
	if err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	return updated, nil
}

// updateStatus applies change to the latest node status, retrying on conflicts
// with the controllers that write the node at the same time.
func updateStatus(ctx context.Context, cs kubernetes.Interface, name string, change func(*v1.Node)) (*v1.Node, error) {
	var updated *v1.Node
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(n)
		updated, err = cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
	return updated, err
}

// SetNodeReady sets a node's Ready condition, as its kubelet (or, for False
// or Unknown, the node lifecycle controller) would.
func SetNodeReady(ctx context.Context, cs kubernetes.Interface, name string, ready bool) error {
	if _, err := updateStatus(ctx, cs, name, func(n *v1.Node) { setReady(n, ready) }); err != nil {
		return fmt.Errorf("set node %s ready=%v: %w", name, ready, err)
	}
	return nil
}

func setReady(node *v1.Node, ready bool) {
	status, reason := v1.ConditionFalse, "KubeletNotReady"
	if ready {
		status, reason = v1.ConditionTrue, "KubeletReady"
	}
	now := metav1.NewTime(time.Now())
	cond := v1.NodeCondition{Type: v1.NodeReady, Status: status, Reason: reason, LastHeartbeatTime: now, LastTransitionTime: now}
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == v1.NodeReady {
			node.Status.Conditions[i] = cond
			return
		}
	}
	node.Status.Conditions = append(node.Status.Conditions, cond)
}

// CreateReadyNode creates a Node as it stands once initialized: without the
// uninitialized taint, with the ips as InternalIP addresses, and Ready.
func CreateReadyNode(ctx context.Context, cs kubernetes.Interface, name string, ips ...string) (*v1.Node, error) {
	addrs := make([]v1.NodeAddress, 0, len(ips))
	for _, ip := range ips {
		addrs = append(addrs, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip})
	}
	updated, err := createNode(ctx, cs, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, addrs, true)
	if err != nil {
		return nil, fmt.Errorf("create node %s: %w", name, err)
	}
	return updated, nil
}

// Uninitialized reports whether a node still has the taint that the CCM
// removes once it has initialized the node.
func Uninitialized(n *v1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == cloudproviderapi.TaintExternalCloudProvider {
			return true
		}
	}
	return false
}
