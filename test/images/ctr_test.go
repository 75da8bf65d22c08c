package images

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/metal-ccm/metal-ccm/test/framework"
)

// TestCtrImport imports the pause image into a containerd of its own with
// `ctr -n k8s.io images import`, as the real nodes will, and checks the name
// and digest containerd stores. It needs root and containerd's ctr and
// containerd binaries (Debian's containerd package), and skips without them.
func TestCtrImport(t *testing.T) {
	ctr, err1 := exec.LookPath("ctr")
	containerd, err2 := exec.LookPath("containerd")
	if err1 != nil || err2 != nil || os.Geteuid() != 0 {
		t.Skip("needs root, ctr and containerd")
	}
	dir := t.TempDir()
	res := build(t, Pause(filepath.Join(dir, "pause.tar")))

	sock := filepath.Join(dir, "containerd.sock")
	cfg := filepath.Join(dir, "config.toml")
	// Everything under dir; no CRI plugin, which would want CNI and cgroups.
	conf := fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = %[3]q
[plugins."io.containerd.internal.v1.opt"]
  path = %[4]q
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), sock, filepath.Join(dir, "opt"))
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := framework.StartProcess("containerd", filepath.Join(dir, "containerd.log"), false, containerd, "--config", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := p.StopWithin(10 * time.Second); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("containerd log:\n%s", p.LogTail(40))
		}
	})

	ctrRun := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, ctr, append([]string{"--address", sock, "-n", "k8s.io"}, args...)...).CombinedOutput() //nolint:gosec // ctr with the test's arguments
		return string(out), err
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, err := ctrRun("version")
		if err == nil {
			break
		}
		if time.Now().After(deadline) || p.Exited() {
			t.Fatalf("containerd not ready: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// native: works on any file system, and unpacking checks the layer.
	if out, err := ctrRun("images", "import", "--snapshotter", "native", res.Path); err != nil {
		t.Fatalf("ctr images import: %v: %s", err, out)
	}
	out, err := ctrRun("images", "ls", "-q")
	if err != nil {
		t.Fatalf("ctr images ls: %v: %s", err, out)
	}
	if names := strings.Fields(out); !slices.Equal(names, []string{res.Ref}) {
		t.Errorf("images %q, want only %s", names, res.Ref)
	}
	out, err = ctrRun("images", "ls")
	if err != nil || !strings.Contains(out, res.Digest.String()) {
		t.Errorf("ctr images ls (%v): want the digest %s in:\n%s", err, res.Digest, out)
	}
}
