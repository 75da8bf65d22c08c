package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
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

// CloudConfigMapName and CloudConfigKey are where the chart puts the
// cloud-config, and where `kubectl metal-ccm status` reads it.
const (
	CloudConfigMapName = "metal-cloud-config"
	CloudConfigKey     = "cloud-config.yaml"
)

// CreateCloudConfigMap puts the cloud-config at path into namespace's
// ConfigMap metal-cloud-config, as the chart does (a replica started by
// StartCCM reads the file itself).
func CreateCloudConfigMap(ctx context.Context, cs kubernetes.Interface, namespace, path string) error {
	data, err := os.ReadFile(path) //nolint:gosec // a test's or the local cluster's own cloud-config
	if err != nil {
		return fmt.Errorf("cloud-config: %w", err)
	}
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: CloudConfigMapName}, Data: map[string]string{CloudConfigKey: string(data)}}
	if _, err := cs.CoreV1().ConfigMaps(namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create the cloud-config's ConfigMap: %w", err)
	}
	return nil
}

// WaitStatus waits up to 90 s (a sessions Lease is written at most every
// 30 s) until `kubectl metal-ccm status ARGS` succeeds with output that
// matches every regular expression of want, and fails t otherwise.
func (cp *ControlPlane) WaitStatus(t testing.TB, args []string, want ...string) {
	t.Helper()
	res := make([]*regexp.Regexp, 0, len(want))
	for _, w := range want {
		res = append(res, regexp.MustCompile(w))
	}
	var out string
	err := wait.PollUntilContextTimeout(context.Background(), 2*time.Second, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		stdout, stderr, code, err := cp.KubectlMetalCCM(ctx, append([]string{"status"}, args...)...)
		if err != nil {
			return false, err
		}
		out = stdout + stderr
		if code != 0 {
			return false, nil
		}
		for _, re := range res {
			if !re.MatchString(stdout) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("kubectl metal-ccm status %v does not show %q within 90s: %v; last output:\n%s", args, want, err, out)
	}
}
