package chaos

import (
	"context"
	"testing"
	"time"

	"github.com/metal-ccm/metal-ccm/test/framework"
)

// bmcDefaultGraceFault is the power-off through a BMC with Kubernetes'
// own node monitoring: the time a cluster without the fast path sees.
const bmcDefaultGraceFault = "machine powered off through its BMC, Kubernetes' default node monitoring, no fast path, deletePods: StatefulSet pod back on another node"

// defaultGraceConfirmFor is the confirmation of the row: the node has
// been silent for the whole grace period when the source is first asked.
const defaultGraceConfirmFor = 2 * time.Second

// defaultGraceMonitor is the row's: kube-controller-manager's node
// monitor with its defaults, the leader deleting the pods.
var defaultGraceMonitor = monitor{grace: 50 * time.Second, confirmFor: defaultGraceConfirmFor, deletePods: true,
	note: "kube-controller-manager's defaults (node-monitor-period 5s), the kubelets renewing their Lease every 2s (the default every 10s: NotReady up to 8s sooner)"}

// defaultGrace powers the pod's node off n times as powerOffs does, with
// kube-controller-manager restarted with its own node-monitor defaults
// and the replica deleting the pods of the nodes it tainted (no fast
// path), then puts the lab's node monitor back.
func (bl *bmcLab) defaultGrace(t *testing.T, res result, n int) result {
	ctx := context.Background()
	if err := bl.reload(ctx, false, defaultGraceConfirmFor, true); err != nil {
		t.Fatal(err)
	}
	if err := bl.cp.RestartKCM(ctx, framework.Options{Dir: bl.cp.Dir, RealNodes: true, KubernetesNodeMonitor: true}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := bl.cp.RestartKCM(context.Background(), framework.Options{Dir: bl.cp.Dir, RealNodes: true}); err != nil {
			t.Errorf("restart kube-controller-manager with the lab's node monitor: %v", err)
		}
	})
	return bl.powerOffs(t, res, n, defaultGraceMonitor)
}
