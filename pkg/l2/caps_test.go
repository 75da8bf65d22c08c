package l2

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestDropNetRaw builds testdata/dropnetraw without cgo (as the image's
// agent is built: DropNetRaw sets every thread, which a cgo binary cannot)
// and runs it as this process's user: with CAP_NET_RAW (root here), it
// drops it for good: no longer permitted, a packet socket refused,
// RaiseNetRaw unable to have it again.
func TestDropNetRaw(t *testing.T) {
	if has, err := HasNetRaw(); err != nil || !has {
		t.Skipf("this process does not have CAP_NET_RAW to drop (%v)", err)
	}
	bin := filepath.Join(t.TempDir(), "dropnetraw")
	build := exec.Command("go", "build", "-o", bin, "./testdata/dropnetraw") //nolint:gosec // go, on a path of the test's own
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./testdata/dropnetraw: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin).CombinedOutput(); err != nil { //nolint:gosec // the binary the test built
		t.Fatalf("dropnetraw: %v: %s", err, out)
	}
}
