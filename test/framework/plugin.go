package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
)

// KubectlMetalCCM runs the kubectl plugin (cmd/kubectl-metal_ccm) with args
// as the admin, as `kubectl metal-ccm ARGS` would, and returns its stdout,
// its stderr and its exit code; err only when it could not run.
func (cp *ControlPlane) KubectlMetalCCM(ctx context.Context, args ...string) (stdout, stderr string, code int, err error) {
	bin, err := Binary("kubectl-metal_ccm")
	if err != nil {
		return "", "", 0, err
	}
	if len(args) == 0 {
		return "", "", 0, errors.New("kubectl-metal_ccm: no subcommand")
	}
	args = append([]string{args[0], "--kubeconfig", cp.AdminKubeconfig}, args[1:]...)
	cmd := exec.CommandContext(ctx, bin, args...) //nolint:gosec // the repository's own binary
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return out.String(), errOut.String(), exit.ExitCode(), nil
	case err != nil:
		return "", "", 0, fmt.Errorf("run %s: %w", bin, err)
	}
	return out.String(), errOut.String(), 0, nil
}
