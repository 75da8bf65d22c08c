package integration

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/metal-ccm/metal-ccm/test/framework"
)

// TestLeastPrivilegeClusterRole runs the CCM with nothing but the token of the
// ServiceAccount of deploy/, bound to deploy/'s roles, and fails on any
// "forbidden" in its log.
func TestLeastPrivilegeClusterRole(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kubeconfig, err := cp.LeastPrivilegeKubeconfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, `nodes:
  inventory:
  - {name: rbac-a, zone: z1}
`)
	// The lease name is the one the Role allows.
	c := startCCM(t, framework.CCMOptions{Name: "ccm-rbac", Kubeconfig: kubeconfig, CloudConfig: cfg,
		Args: []string{"--leader-elect-resource-name", "cloud-controller-manager"}})
	registerNode(t, "rbac-a", true, "198.18.6.10")
	registerNode(t, "rbac-b", true, "198.18.6.11")
	waitInitialized(t, "rbac-a", 30*time.Second)
	waitInitialized(t, "rbac-b", 30*time.Second)
	// Let the periodic node status update and the lifecycle check run once.
	time.Sleep(3 * time.Second)
	if m := regexp.MustCompile(`(?i).*forbidden.*`).FindAllString(c.Log(), 5); len(m) > 0 {
		t.Errorf("the CCM was refused with deploy/'s ClusterRole:\n%v", m)
	}
}
