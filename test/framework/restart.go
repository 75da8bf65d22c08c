package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// ErrNotRunning is returned when a process to restart has already exited.
var ErrNotRunning = errors.New("process is not running")

// RestartOptions shape a restart of kube-apiserver.
type RestartOptions struct {
	// Kill ends it with SIGKILL instead of SIGTERM (a crash rather than a
	// graceful shutdown).
	Kill bool
	// Down is how long it stays stopped before it starts again.
	Down time.Duration
	// Grace is how long a SIGTERM is given before SIGKILL. Default 10s.
	Grace time.Duration
}

// RestartTimes are when a restart happened.
type RestartTimes struct {
	// Stopped is when the old process had ended.
	Stopped time.Time
	// Ready is when the new process answered /readyz.
	Ready time.Time
}

// RestartAPIServer stops kube-apiserver by its PID and starts it again with
// the same command line (so the same port, certificates, keys and tokens: every
// kubeconfig keeps working), then waits until it is ready. Its log goes on in
// the same file. The etcd data is untouched.
func (cp *ControlPlane) RestartAPIServer(ctx context.Context, o RestartOptions) (RestartTimes, error) {
	old := cp.APIServer
	if old == nil || old.Exited() {
		return RestartTimes{}, fmt.Errorf("restart kube-apiserver: %w", ErrNotRunning)
	}
	args, err := commandLine(old.PID())
	if err != nil {
		return RestartTimes{}, fmt.Errorf("restart kube-apiserver: %w", err)
	}
	if o.Grace == 0 {
		o.Grace = 10 * time.Second
	}
	if o.Kill {
		old.Kill()
	} else {
		old.Stop(o.Grace)
	}
	var times RestartTimes
	times.Stopped = time.Now()
	select {
	case <-ctx.Done():
		return times, fmt.Errorf("restart kube-apiserver: %w", ctx.Err())
	case <-time.After(o.Down):
	}
	p, err := StartProcess(old.Name, old.LogPath, false, args[0], args[1:]...)
	if err != nil {
		return times, fmt.Errorf("restart kube-apiserver: %w", err)
	}
	cp.APIServer = p
	wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if err := waitHealthy(wctx, p, cp.URL+"/readyz", cp.adminToken); err != nil {
		return times, fmt.Errorf("restart kube-apiserver: %w", err)
	}
	times.Ready = time.Now()
	return times, nil
}

// commandLine reads a running process's argv from /proc.
func commandLine(pid int) ([]string, error) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return nil, fmt.Errorf("command line of %d: %w", pid, err)
	}
	var args []string
	for _, a := range bytes.Split(bytes.TrimSuffix(raw, []byte{0}), []byte{0}) {
		args = append(args, string(a))
	}
	if len(args) == 0 || args[0] == "" {
		return nil, fmt.Errorf("command line of %d is empty: %w", pid, ErrNotRunning)
	}
	return args, nil
}
