package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/leaderelection"

	"github.com/metal-ccm/metal-ccm/test/framework"
)

const (
	leaseDuration = 4 * time.Second
	renewDeadline = 3 * time.Second
	retryPeriod   = 500 * time.Millisecond
)

func TestOnlyTheLeaderReconcilesAndAFollowerTakesOver(t *testing.T) {
	cfg := writeConfig(t, "nodes:\n  discovery: {policy: Accept}\n")
	args := []string{
		"--leader-elect-lease-duration", leaseDuration.String(),
		"--leader-elect-renew-deadline", renewDeadline.String(),
		"--leader-elect-retry-period", retryPeriod.String(),
	}
	a := startCCM(t, framework.CCMOptions{Name: "ccm-leader-a", CloudConfig: cfg, Args: args})
	b := startCCM(t, framework.CCMOptions{Name: "ccm-leader-b", CloudConfig: cfg, Args: args})

	var leader, follower *framework.CCM
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		switch {
		case a.Leads() && b.Leads():
			t.Fatal("both replicas acquired the lease")
		case a.Leads():
			leader, follower = a, b
		case b.Leads():
			leader, follower = b, a
		}
		return leader != nil, nil
	})
	if err != nil {
		t.Fatalf("no replica acquired the lease: %v", err)
	}

	registerNode(t, "leader-1", true, "198.18.5.10")
	waitInitialized(t, "leader-1", 30*time.Second)
	if strings.Contains(follower.Log(), "leader-1") {
		t.Errorf("the follower %s touched node leader-1:\n%s", follower.Name, follower.LogTail(20))
	}
	if !strings.Contains(leader.Log(), "leader-1") {
		t.Errorf("the leader %s did not log node leader-1", leader.Name)
	}

	killed := time.Now()
	leader.Kill()
	err = wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 3*leaseDuration, true, func(context.Context) (bool, error) {
		return follower.Leads(), nil
	})
	took := time.Since(killed)
	if err != nil {
		t.Fatalf("the follower did not take over within %s after SIGKILL of the leader", 3*leaseDuration)
	}
	t.Logf("follower took the lease %s after the leader was killed (lease duration %s)", took.Round(time.Millisecond), leaseDuration)
	// The follower saw the last renewal at most one retry period after it
	// happened, and tries again after the lease expires within one retry
	// period stretched by client-go's jitter (leaderelection.JitterFactor:
	// up to 2.2 retry periods).
	limit := leaseDuration + retryPeriod + time.Duration(float64(retryPeriod)*(1+leaderelection.JitterFactor))
	if took > limit {
		t.Errorf("takeover took %s, more than lease duration + 3.2 retry periods (%s)", took, limit)
	}

	registerNode(t, "leader-2", true, "198.18.5.11")
	n := waitInitialized(t, "leader-2", 30*time.Second)
	if n.Spec.ProviderID != "metal://discovered/leader-2" {
		t.Errorf("providerID = %q", n.Spec.ProviderID)
	}
	lease, err := client.CoordinationV1().Leases("kube-system").Get(context.Background(), "testonlytheleaderreconcilesandafollowertakesover", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("lease: %v", err)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		t.Errorf("lease has no holder after takeover")
	}
}
