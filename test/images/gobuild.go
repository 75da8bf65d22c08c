package images

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// goBuild builds the main package pkg into a static Linux binary at out.
//
// CGO_ENABLED=0 because the image has no libc. -trimpath and -buildvcs=false
// keep build paths and the commit out of the binary, so a build gives the same
// bytes wherever and whenever it runs, and the image the same digest. -s -w as
// in the Dockerfile: the images never need symbols.
func goBuild(ctx context.Context, dir, arch, pkg, out string) error {
	args := []string{"build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w", "-o", out, pkg}
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
