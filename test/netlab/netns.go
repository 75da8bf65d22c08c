package netlab

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"time"

	"github.com/metal-ccm/metal-ccm/test/framework"
)

// RunInNamespace runs fn in network namespace ns (framework.RunInNetNS).
func (l *Lab) RunInNamespace(ns string, fn func() error) error {
	return framework.RunInNetNS(ns, fn)
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
	return getIn(ctx, l.Client, rawURL)
}

// ClientGet does an HTTP GET of rawURL from the L2 lab's client namespace,
// as Lab.ClientGet does.
func (l *L2Lab) ClientGet(ctx context.Context, rawURL string) (string, error) {
	return getIn(ctx, l.Client, rawURL)
}

// getIn does an HTTP GET of rawURL from namespace ns on a new connection.
func getIn(ctx context.Context, ns, rawURL string) (string, error) {
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
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return framework.DialInNetNS(ctx, ns, network, addr)
		},
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
		return framework.DialInNetNS(ctx, ns, network, addr)
	}
}
