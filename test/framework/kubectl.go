package framework

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
)

// Kubectl runs the built kubectl against this control plane as the admin and
// returns its standard output.
func (cp *ControlPlane) Kubectl(ctx context.Context, args ...string) (string, error) {
	bin, err := Binary("kubectl")
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig", cp.AdminKubeconfig}, args...)...) //nolint:gosec // the built kubectl
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("kubectl %v: %w: %s", args, err, errOut.String())
	}
	return out.String(), nil
}
