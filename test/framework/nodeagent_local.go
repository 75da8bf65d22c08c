package framework

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// nodeAgentManifest is the node agent's identity as the chart renders it
// for L2 pools: its ServiceAccount, ClusterRole and binding, the L2
// witness's Lease with the right to update it, the Role and admission
// policy of its sessions Lease (and a DaemonSet that stays unscheduled
// where no DaemonSet controller runs).
func nodeAgentManifest() string {
	return filepath.Join(RepoRoot(), "deploy", "node-agent", "agent-l2.yaml")
}

// L2WitnessLease is the L2 witness's Lease of nodeAgentManifest, as the
// agents' --l2-witness-lease names it.
const L2WitnessLease = "kube-system/metal-ccm-l2-witness"

// CreateNodeAgentToken applies the node agent's least-privilege identity
// (deploy/node-agent/agent-l2.yaml: read Services, Nodes and
// EndpointSlices; get and update the L2 witness's Lease; its own sessions
// Lease with a pod-bound token only) and returns a token of its ServiceAccount valid for
// expiration, for agents started outside a test (make run). Nothing is
// deleted afterwards: the identity goes with the control plane. A test
// uses NodeAgentToken, which deletes it when the test ends.
func (cp *ControlPlane) CreateNodeAgentToken(ctx context.Context, expiration time.Duration) (string, error) {
	if _, err := cp.Kubectl(ctx, "apply", "-f", nodeAgentManifest()); err != nil {
		return "", err
	}
	cs, err := cp.Client()
	if err != nil {
		return "", err
	}
	tr, err := cs.CoreV1().ServiceAccounts("kube-system").CreateToken(ctx, NodeAgentName, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(expiration / time.Second))},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token for kube-system/%s: %w", NodeAgentName, err)
	}
	return tr.Status.Token, nil
}
