package framework

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// RunInNetNS runs fn on an OS thread that has entered network namespace ns
// (under /run/netns), then returns the thread to its own namespace. Sockets
// that fn creates belong to ns and keep working afterwards, from any
// goroutine; goroutines that fn starts do not run in ns. If the thread
// cannot be switched back it is thrown away.
func RunInNetNS(ns string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No deferred unlock: a thread left in ns must end with this goroutine.
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("enter network namespace %s: %w", ns, err)
			return
		}
		defer func() { _ = self.Close() }()
		target, err := os.Open(filepath.Join("/run/netns", ns)) //nolint:gosec // a namespace the test made
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("enter network namespace %s: %w", ns, err)
			return
		}
		defer func() { _ = target.Close() }()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("enter network namespace %s: %w", ns, err)
			return
		}
		fnErr := fn()
		if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- errors.Join(fnErr, fmt.Errorf("leave network namespace %s: %w", ns, err))
			return
		}
		runtime.UnlockOSThread()
		errc <- fnErr
	}()
	return <-errc
}

// DialInNetNS dials addr from network namespace ns.
func DialInNetNS(ctx context.Context, ns, network, addr string) (net.Conn, error) {
	var conn net.Conn
	err := RunInNetNS(ns, func() error {
		var err error
		conn, err = (&net.Dialer{}).DialContext(ctx, network, addr)
		return err
	})
	if err != nil && conn != nil {
		_ = conn.Close()
		conn = nil
	}
	return conn, err
}

// ListenInNetNS listens on addr inside network namespace ns; the socket
// stays in ns.
func ListenInNetNS(ns, network, addr string) (net.Listener, error) {
	var ln net.Listener
	err := RunInNetNS(ns, func() error {
		var err error
		ln, err = net.Listen(network, addr)
		return err
	})
	if err != nil && ln != nil {
		_ = ln.Close()
		ln = nil
	}
	return ln, err
}
