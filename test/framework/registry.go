package framework

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// registryBin is Debian's docker-registry package: the CNCF Distribution
// registry (2.8).
const registryBin = "docker-registry"

// Registry is a real OCI registry (Distribution) a test started, serving
// plain HTTP on Addr with its storage under the test's temporary folder.
type Registry struct {
	// Addr is where it listens (a lab address or loopback) and its name in
	// image references: Addr/REPOSITORY:TAG.
	Addr    netip.AddrPort
	process *Process
}

// RegistryAvailable says why a registry cannot run here, or nil.
func RegistryAvailable() error {
	if _, err := exec.LookPath(registryBin); err != nil {
		return fmt.Errorf("the registry test needs %s (run hack/install-deps.sh as root): %w", registryBin, err)
	}
	return nil
}

// StartRegistry starts a registry on addr with a config file of its own
// (storage in a temporary folder, deletes allowed, no authentication, no
// TLS: the nodes' containerd is told to pull from it over HTTP,
// RealNodeOptions.Registries) and stops it by PID when the test ends. It
// fails the test unless the registry answers /v2/ within 20 s.
func StartRegistry(t testing.TB, addr netip.AddrPort) *Registry {
	t.Helper()
	if err := RegistryAvailable(); err != nil {
		t.Fatal(err)
	}
	bin, _ := exec.LookPath(registryBin)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cfg, []byte(registryConfig(filepath.Join(dir, "data"), addr)), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := StartProcess("registry", filepath.Join(dir, "registry.log"), false, bin, "serve", cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := &Registry{Addr: addr, process: p}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("registry log (%s), last %d lines:\n%s", p.LogPath, FailureLogLines, p.LogTail(FailureLogLines))
		}
		p.Stop(5 * time.Second)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	url := "http://" + addr.String() + "/v2/"
	if err := waitFor(ctx, p, 100*time.Millisecond, func() bool {
		resp, err := client.Get(url) //nolint:noctx // bounded by the client's timeout
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}); err != nil {
		t.Fatalf("registry on %s: %v", addr, err)
	}
	return r
}

// registryConfig is Distribution's configuration: filesystem storage under
// data, HTTP on addr, no health checks of its storage driver, logs as text.
func registryConfig(data string, addr netip.AddrPort) string {
	return fmt.Sprintf(`version: 0.1
log:
  level: info
  formatter: text
storage:
  filesystem:
    rootdirectory: %q
  delete:
    enabled: true
http:
  addr: %q
`, data, addr.String())
}

// PID is the registry's process id.
func (r *Registry) PID() int { return r.process.PID() }
