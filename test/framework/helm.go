package framework

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Helm runs the pinned helm (hack/build-helm.sh builds it into BinDir)
// against this control plane as the admin, and returns its standard output.
// Each run gets empty cache, config and data folders of its own, removed
// afterwards: the user's repositories and plugins play no part, and a release
// lives in the cluster (its Secrets), not in those folders.
func (cp *ControlPlane) Helm(ctx context.Context, args ...string) (string, error) {
	bin, err := Binary("helm")
	if err != nil {
		return "", err
	}
	home, err := os.MkdirTemp("", "helm-")
	if err != nil {
		return "", fmt.Errorf("helm %v: %w", args, err)
	}
	defer func() { _ = os.RemoveAll(home) }()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig", cp.AdminKubeconfig}, args...)...) //nolint:gosec // the pinned helm
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("helm %v: %w: %s", args, err, errOut.String())
	}
	return out.String(), nil
}

// ChartDir is the chart that deploy/'s manifests are rendered from.
func ChartDir() string { return filepath.Join(RepoRoot(), "deploy", "chart", "metal-ccm") }
