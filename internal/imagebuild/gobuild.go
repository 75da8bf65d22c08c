package imagebuild

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// GoBuild builds the main package pkg into a static Linux binary for arch at
// out, running go build in dir ("" is the current directory). ldflags are
// more linker flags (such as -X of a version), "" for none.
//
// CGO_ENABLED=0 because the image has no libc. -trimpath and -buildvcs=false
// keep build paths and the commit out of the binary, so a build gives the same
// bytes wherever and whenever it runs, and the image the same digest. -s -w:
// the images never need symbols.
func GoBuild(ctx context.Context, dir, arch, pkg, out, ldflags string) error {
	args := []string{"build", "-trimpath", "-buildvcs=false", "-ldflags=" + strings.TrimSpace("-s -w "+ldflags), "-o", out, pkg}
	cmd := exec.CommandContext(ctx, "go", args...) //nolint:gosec // the go command with this package's own flags
	cmd.Dir = dir
	// Later entries win: these override the caller's environment.
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	// go build starts compilers of its own: a cancelled build stops them all
	// through the process group, and they die with the caller.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(b)))
	}
	return nil
}
