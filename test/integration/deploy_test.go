package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/test/framework"
)

// TestDeployManifests applies every manifest of deploy/ to the real API server
// with a server-side dry run, and checks that the example cloud-config in the
// ConfigMap is valid.
func TestDeployManifests(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := filepath.Join(framework.RepoRoot(), "deploy")
	out, err := cp.Kubectl(ctx, "apply", "--dry-run=server", "-f", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"daemonset.apps/metal-cloud-controller-manager", "configmap/metal-cloud-config", "clusterrole.rbac.authorization.k8s.io/system:metal-cloud-controller-manager"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run output lacks %s:\n%s", want, out)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "configmap.yaml")) //nolint:gosec // a file of this repository
	if err != nil {
		t.Fatal(err)
	}
	var cm v1.ConfigMap
	if err := yaml.Unmarshal(data, &cm); err != nil {
		t.Fatal(err)
	}
	if _, err := config.Parse([]byte(cm.Data["cloud-config.yaml"])); err != nil {
		t.Errorf("deploy/configmap.yaml holds an invalid cloud-config: %v", err)
	}
}
