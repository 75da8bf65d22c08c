// Package framework starts the real control plane (etcd, kube-apiserver,
// kube-controller-manager) and the CCM on 127.0.0.1, for the integration and
// end-to-end tests and for `make run`. Every process it starts is stopped by
// its PID (its process group), never by name.
package framework

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// Process is a child process with its output in a log file.
type Process struct {
	Name    string
	LogPath string
	cmd     *exec.Cmd
	done    chan struct{}
	mu      sync.Mutex
	err     error
}

// StartProcess runs bin with args in its own process group, its standard
// output and error appended to logPath. With detach the process also gets its
// own session, so it outlives the caller.
func StartProcess(name, logPath string, detach bool, bin string, args ...string) (*Process, error) {
	if err := os.MkdirAll(filepath.Dir(logPath), 0o750); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600) //nolint:gosec // path built by the harness
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	cmd := exec.Command(bin, args...) //nolint:gosec // binaries of this repository's build
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: !detach, Setsid: detach}
	if !detach {
		// The child dies with the test binary even if the test is killed.
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{Name: name, LogPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		_ = logFile.Close()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(p.done)
	}()
	return p, nil
}

// PID is the process id (and process-group id) of the child.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Done is closed when the process has ended.
func (p *Process) Done() <-chan struct{} { return p.done }

// Kill sends SIGKILL to the process group and waits for the process to end.
func (p *Process) Kill() {
	_ = syscall.Kill(-p.PID(), syscall.SIGKILL)
	<-p.done
}

// Freeze stops the process (SIGSTOP, by its PID) or lets it go on
// (SIGCONT): a frozen process holds its sockets and answers nothing, as on
// a machine that lost power.
func (p *Process) Freeze(on bool) error {
	sig := syscall.SIGCONT
	if on {
		sig = syscall.SIGSTOP
	}
	if err := syscall.Kill(p.PID(), sig); err != nil {
		return fmt.Errorf("%s: %v: %w", p.Name, sig, err)
	}
	return nil
}

// Terminate sends SIGTERM to the process group and returns at once.
func (p *Process) Terminate() {
	_ = syscall.Kill(-p.PID(), syscall.SIGTERM)
}

// Err is how the process ended (nil for exit code 0); valid once Done is
// closed.
func (p *Process) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Stop sends SIGTERM to the process group, then SIGKILL after grace.
func (p *Process) Stop(grace time.Duration) {
	_, _ = p.StopWithin(grace)
}

// ErrStopTimeout says that a process did not end within its time after
// SIGTERM, and was killed.
var ErrStopTimeout = errors.New("did not exit in time after SIGTERM")

// StopWithin sends SIGTERM to the process group and waits up to limit for
// the process to end; then it sends SIGKILL, waits, and returns
// ErrStopTimeout. took is how long the process took to end after SIGTERM. A
// process that has already ended is left alone.
func (p *Process) StopWithin(limit time.Duration) (took time.Duration, err error) {
	if p.Exited() {
		return 0, nil
	}
	start := time.Now()
	_ = syscall.Kill(-p.PID(), syscall.SIGTERM)
	select {
	case <-p.done:
		return time.Since(start), nil
	case <-time.After(limit):
		p.Kill()
		return time.Since(start), fmt.Errorf("%s: %w (%s)", p.Name, ErrStopTimeout, limit)
	}
}

// Log returns the process's output so far.
func (p *Process) Log() string {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return string(b)
}

// LogTail is the last n lines of the process's output so far.
func (p *Process) LogTail(n int) string { return Tail(p.Log(), n) }

// LogContains reports whether the process's output so far contains s,
// ignoring case. It reads the log in chunks: a busy replica's log grows to
// megabytes.
func (p *Process) LogContains(s string) bool {
	f, err := os.Open(p.LogPath)
	if err != nil {
		return false
	}
	defer func() { _ = f.Close() }()
	want := bytes.ToLower([]byte(s))
	buf := make([]byte, max(1<<20, 2*len(want)))
	carry := 0
	for {
		n, err := f.Read(buf[carry:])
		if bytes.Contains(bytes.ToLower(buf[:carry+n]), want) {
			return true
		}
		if err != nil {
			return false
		}
		// Keep the tail, in case s spans two chunks.
		keep := min(len(want), carry+n)
		copy(buf, buf[carry+n-keep:carry+n])
		carry = keep
	}
}

// StopPID stops a process group by the PID recorded for it: SIGTERM, then
// SIGKILL after grace. It is how hack/local-down.sh ends a detached cluster.
func StopPID(pid int, grace time.Duration) {
	if pid <= 1 {
		return
	}
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// RepoRoot finds the repository root from this source file's location.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// BinDir is where the control-plane and CCM binaries are: $METAL_CCM_BIN_DIR,
// or _output/bin of the repository.
func BinDir() string {
	if d := os.Getenv("METAL_CCM_BIN_DIR"); d != "" {
		return d
	}
	return filepath.Join(RepoRoot(), "_output", "bin")
}

// Binary returns the path of a built binary, or an error that says how to build it.
func Binary(name string) (string, error) {
	p := filepath.Join(BinDir(), name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("binary %s missing (run hack/build.sh, or make test): %w", p, err)
	}
	return p, nil
}

// waitFor polls check every interval until it returns true, the process
// exits, or ctx ends.
func waitFor(ctx context.Context, p *Process, interval time.Duration, check func() bool) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if check() {
			return nil
		}
		if p != nil && p.Exited() {
			return fmt.Errorf("%s exited; its log %s ends with:\n%s", p.Name, p.LogPath, p.LogTail(20))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", nameOf(p), ctx.Err())
		case <-t.C:
		}
	}
}

// probe is the client of health checks: every server here serves a
// self-signed certificate on loopback.
var probe = &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
	TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // self-signed serving certs on loopback
}}

// probeIn is probe's counterpart for servers in network namespace ns.
func probeIn(ns string) *http.Client {
	t := probe.Transport.(*http.Transport).Clone()
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		return DialInNetNS(ctx, ns, network, addr)
	}
	return &http.Client{Timeout: probe.Timeout, Transport: t}
}

// waitHealthy polls url (with a bearer token, when given) until it answers 200.
func waitHealthy(ctx context.Context, p *Process, url, token string) error {
	return waitHealthyWith(ctx, probe, p, url, token)
}

// waitHealthyWith is waitHealthy with the given client.
func waitHealthyWith(ctx context.Context, probe *http.Client, p *Process, url, token string) error {
	return waitFor(ctx, p, 100*time.Millisecond, func() bool {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := probe.Do(req)
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

func nameOf(p *Process) string {
	if p == nil {
		return "condition"
	}
	return p.Name
}

// Tail is the last n lines of s.
func Tail(s string, n int) string {
	lines := 0
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '\n' {
			lines++
			if lines > n {
				return s[i+1:]
			}
		}
	}
	return s
}
