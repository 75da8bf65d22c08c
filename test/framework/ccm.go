package framework

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// CCMOptions configure one CCM replica.
type CCMOptions struct {
	// Name names the replica's log file. Default: "ccm".
	Name string
	// Kubeconfig is the client identity. Default: the admin's.
	Kubeconfig string
	// CloudConfig is the --cloud-config path; empty gives the defaults.
	CloudConfig string
	// Detach lets the replica outlive the caller.
	Detach bool
	// Args are extra flags; later flags win.
	Args []string
	// Wrapper is a command the replica runs under (for example setpriv to
	// drop privileges): the CCM binary and its flags are appended to it.
	Wrapper []string
	// HealthChecks keeps the node health checks of the cloud-config. By
	// default they are turned off (healthChecks.enabled: false appended to
	// a cloud-config that has no healthChecks section): registered nodes
	// run no kube-proxy, and their addresses may lead nowhere but the
	// machine's default route, where no test traffic may go.
	HealthChecks bool
	// NetNS runs the replica in that network namespace (a name under
	// /run/netns, with nsenter, before Wrapper), as on a node of a lab
	// whose nodes the host has no route to; Kubeconfig must then reach the
	// API server from there (a RealNode's Kubeconfig does). Its /healthz
	// and /metrics are fetched from that namespace.
	NetNS string
	// Env, as NAME=value, is added to the replica's environment (with
	// env(1), after NetNS and Wrapper): POD_NAME and POD_NAMESPACE make it
	// act as in its pod (its Events, its sessions' Lease).
	Env []string
}

// CCM is a running CCM replica.
type CCM struct {
	*Process
	HealthzURL string
	// probe fetches HealthzURL and the metrics (from CCMOptions.NetNS).
	probe *http.Client
}

// StartCCM starts a metal-cloud-controller-manager replica against this
// control plane, serving /healthz on a free loopback port, and waits until
// /healthz answers.
func (cp *ControlPlane) StartCCM(ctx context.Context, o CCMOptions) (*CCM, error) {
	bin, err := Binary("metal-cloud-controller-manager")
	if err != nil {
		return nil, err
	}
	if o.Name == "" {
		o.Name = "ccm"
	}
	if o.Kubeconfig == "" {
		o.Kubeconfig = cp.AdminKubeconfig
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	args := []string{
		"--kubeconfig", o.Kubeconfig,
		"--authentication-kubeconfig", o.Kubeconfig,
		"--authorization-kubeconfig", o.Kubeconfig,
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(port),
		"--cert-dir", filepath.Join(cp.Dir, o.Name+"-certs"),
		"--v", "2",
	}
	if o.CloudConfig != "" {
		if !o.HealthChecks {
			if err := disableHealthChecks(o.CloudConfig); err != nil {
				return nil, err
			}
		}
		args = append(args, "--cloud-config", o.CloudConfig)
	}
	args = append(args, o.Args...)
	wrapper := o.Wrapper
	if len(o.Env) > 0 {
		wrapper = append(append(append([]string{}, wrapper...), "env"), o.Env...)
	}
	if o.NetNS != "" {
		wrapper = append([]string{"nsenter", "--net=" + filepath.Join("/run/netns", o.NetNS), "--"}, wrapper...)
	}
	if len(wrapper) > 0 {
		args = append(append(wrapper[1:len(wrapper):len(wrapper)], bin), args...)
		bin = wrapper[0]
	}
	p, err := StartProcess(o.Name, filepath.Join(cp.Dir, "logs", o.Name+".log"), o.Detach, bin, args...)
	if err != nil {
		return nil, err
	}
	c := &CCM{Process: p, HealthzURL: "https://127.0.0.1:" + strconv.Itoa(port) + "/healthz", probe: probe}
	if o.NetNS != "" {
		c.probe = probeIn(o.NetNS)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := waitHealthyWith(wctx, c.probe, p, c.HealthzURL, ""); err != nil {
		p.Kill()
		return nil, fmt.Errorf("start %s: %w", o.Name, err)
	}
	return c, nil
}

// disableHealthChecks appends healthChecks.enabled: false to the
// cloud-config at path unless it has a healthChecks section. Only a test's
// own file, in the temporary folder, is changed.
func disableHealthChecks(path string) error {
	b, err := os.ReadFile(path) //nolint:gosec // the test's own cloud-config
	if err != nil {
		return fmt.Errorf("cloud-config: %w", err)
	}
	if bytes.HasPrefix(b, []byte("healthChecks:")) || bytes.Contains(b, []byte("\nhealthChecks:")) {
		return nil
	}
	if abs, err := filepath.Abs(path); err != nil || !strings.HasPrefix(abs, filepath.Clean(os.TempDir())+string(filepath.Separator)) {
		return fmt.Errorf("cloud-config %s has no healthChecks section and is not a test's temporary file: give it one, or set CCMOptions.HealthChecks", path)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		b = append(b, '\n')
	}
	if err := os.WriteFile(path, append(b, "healthChecks:\n  enabled: false\n"...), 0o600); err != nil { //nolint:gosec // the test's own cloud-config
		return fmt.Errorf("cloud-config: %w", err)
	}
	return nil
}

// FailureLogLines is how many of a replica's last log lines a failed test
// prints.
const FailureLogLines = 80

// StartCCMForTest starts a replica as StartCCM does, within a minute, and
// fails the test if it cannot. When the test ends the replica is stopped by
// its PID (SIGTERM, SIGKILL after 5s), and if the test failed the end of its
// log is printed.
func (cp *ControlPlane) StartCCMForTest(t testing.TB, o CCMOptions) *CCM {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := cp.StartCCM(ctx, o)
	if err != nil {
		t.Fatalf("start CCM: %v", err)
	}
	t.Cleanup(func() {
		c.Stop(5 * time.Second)
		if t.Failed() {
			t.Logf("%s log (%s), last %d lines:\n%s", c.Name, c.LogPath, FailureLogLines, c.LogTail(FailureLogLines))
		}
	})
	return c
}

// Leads reports whether the replica's log says it acquired the
// leader-election lease.
func (c *CCM) Leads() bool { return c.LogContains("successfully acquired lease") }

// Metrics fetches the replica's /metrics as the admin (the replica checks the
// caller with the API server, as in a cluster).
func (cp *ControlPlane) Metrics(ctx context.Context, c *CCM) (string, error) {
	url := strings.TrimSuffix(c.HealthzURL, "/healthz") + "/metrics"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", fmt.Errorf("metrics: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+cp.adminToken)
	resp, err := c.probe.Do(req)
	if err != nil {
		return "", fmt.Errorf("metrics: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("metrics: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("metrics: %s: %s", resp.Status, body)
	}
	return string(body), nil
}
