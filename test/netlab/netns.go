package netlab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// RunInNamespace runs fn on an OS thread that has entered network namespace
// ns, then returns the thread to its own namespace. Sockets that fn creates
// belong to ns and keep working afterwards, from any goroutine; goroutines
// that fn starts do not run in ns. If the thread cannot be switched back it
// is thrown away.
func (l *Lab) RunInNamespace(ns string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No deferred unlock: a thread left in ns must end with this goroutine.
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("netlab enter %s: %w", ns, err)
			return
		}
		defer func() { _ = self.Close() }()
		target, err := os.Open(filepath.Join("/run/netns", ns)) //nolint:gosec // a namespace of this lab
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("netlab enter %s: %w", ns, err)
			return
		}
		defer func() { _ = target.Close() }()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("netlab enter %s: %w", ns, err)
			return
		}
		fnErr := fn()
		if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- errors.Join(fnErr, fmt.Errorf("netlab leave %s: %w", ns, err))
			return
		}
		runtime.UnlockOSThread()
		errc <- fnErr
	}()
	return <-errc
}

// AddLoopbackVIP adds ip as a /32 or /128 to the lo of node i, so the node
// accepts traffic for it.
func (l *Lab) AddLoopbackVIP(i int, ip netip.Addr) error {
	if err := checkAddr(ip); err != nil {
		return fmt.Errorf("netlab add VIP: %w", err)
	}
	args := []string{"addr", "add", ip.String() + "/32", "dev", "lo"}
	if ip.Is6() {
		args = []string{"-6", "addr", "add", ip.String() + "/128", "dev", "lo", "nodad"}
	}
	if err := ipn(l.Nodes[i], args...); err != nil {
		return fmt.Errorf("netlab add VIP: %w", err)
	}
	return nil
}

// ServeHTTP starts an HTTP server on addr (e.g. ":8080") inside node i that
// answers every request with the node's name (NodeName). It runs until the
// lab closes.
func (l *Lab) ServeHTTP(i int, addr string) error {
	var ln net.Listener
	err := l.RunInNamespace(l.Nodes[i], func() error {
		var err error
		ln, err = net.Listen("tcp", addr)
		return err
	})
	if err != nil {
		return fmt.Errorf("netlab serve HTTP on node %d: %w", i, err)
	}
	name := l.NodeName(i)
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, name)
		}),
		ReadHeaderTimeout: 5 * time.Second,
	}
	go func() { _ = srv.Serve(ln) }()
	return l.addCloser(func() { _ = srv.Close() })
}

// ClientGet does an HTTP GET of rawURL from the client namespace, on a new
// connection, and returns the body. The URL's host must be an address in the
// lab ranges.
func (l *Lab) ClientGet(ctx context.Context, rawURL string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", fmt.Errorf("netlab client get: %w", err)
	}
	host, err := netip.ParseAddr(u.Hostname())
	if err != nil {
		return "", fmt.Errorf("netlab client get %s: host must be an IP address: %w", rawURL, err)
	}
	if err := checkAddr(host); err != nil {
		return "", fmt.Errorf("netlab client get: %w", err)
	}
	client := &http.Client{Transport: &http.Transport{
		DialContext:       l.DialContextIn(l.Client),
		DisableKeepAlives: true,
		Proxy:             nil,
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return "", fmt.Errorf("netlab client get: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("netlab client get: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("netlab client get %s: %w", rawURL, err)
	}
	if resp.StatusCode != http.StatusOK {
		return string(body), fmt.Errorf("netlab client get %s: status %s", rawURL, resp.Status)
	}
	return string(body), nil
}

// DialContextIn returns a dial function whose connections are made from
// namespace ns.
func (l *Lab) DialContextIn(ns string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var conn net.Conn
		err := l.RunInNamespace(ns, func() error {
			var err error
			conn, err = (&net.Dialer{}).DialContext(ctx, network, addr)
			return err
		})
		return conn, err
	}
}
