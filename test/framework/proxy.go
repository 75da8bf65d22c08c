package framework

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
)

// CutMode is how a TCPProxy cuts its traffic.
type CutMode int

const (
	// Blackhole keeps every connection open and forwards nothing, as a
	// network that drops packets: the client's requests time out.
	Blackhole CutMode = iota
	// Reset closes every connection and each new one at once: the client's
	// requests fail fast.
	Reset
)

// TCPProxy forwards TCP connections from a loopback port to a target
// address, until it is cut. It puts one client (a CCM replica) between it
// and the API server, so that a test can cut that client off alone.
type TCPProxy struct {
	// Addr is the proxy's listening address, 127.0.0.1:port.
	Addr   string
	target string
	ln     net.Listener

	mu    sync.Mutex
	cut   bool
	mode  CutMode
	conns map[net.Conn]bool // both ends of every open connection
	wg    sync.WaitGroup
}

// StartTCPProxy listens on a free loopback port and forwards to target
// (host:port, on loopback).
func StartTCPProxy(target string) (*TCPProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("start proxy to %s: %w", target, err)
	}
	p := &TCPProxy{Addr: ln.Addr().String(), target: target, ln: ln, conns: map[net.Conn]bool{}}
	p.wg.Go(p.serve)
	return p, nil
}

func (p *TCPProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		cut, mode := p.cut, p.mode
		p.conns[c] = true
		p.mu.Unlock()
		switch {
		case cut && mode == Reset:
			p.drop(c)
		case cut:
			// Blackhole: hold the connection, forward nothing.
		default:
			p.wg.Go(func() { p.forward(c) })
		}
	}
}

func (p *TCPProxy) forward(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		p.drop(c)
		return
	}
	p.mu.Lock()
	p.conns[up] = true
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { p.pipe(up, c); done <- struct{}{} }()
	go func() { p.pipe(c, up); done <- struct{}{} }()
	<-done
	p.drop(c)
	p.drop(up)
	<-done
}

// pipe copies src to dst until either fails; while the proxy is cut it reads
// and drops.
func (p *TCPProxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.isCut() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *TCPProxy) isCut() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cut
}

func (p *TCPProxy) drop(c net.Conn) {
	_ = c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// Cut stops all traffic. In Blackhole mode every connection stays open and
// whatever is sent on it is dropped, new connections too; in Reset mode
// every connection is closed, new ones at once.
func (p *TCPProxy) Cut(mode CutMode) {
	p.mu.Lock()
	p.cut, p.mode = true, mode
	var toClose []net.Conn
	if mode == Reset {
		for c := range p.conns {
			toClose = append(toClose, c)
		}
	}
	p.mu.Unlock()
	for _, c := range toClose {
		p.drop(c)
	}
}

// Restore forwards new connections again. The connections open during the
// cut are closed (bytes were dropped on them), so that the client
// reconnects, as it would once its old connections timed out.
func (p *TCPProxy) Restore() {
	p.mu.Lock()
	p.cut = false
	var held []net.Conn
	for c := range p.conns {
		held = append(held, c)
	}
	p.mu.Unlock()
	for _, c := range held {
		p.drop(c)
	}
}

// Close stops the proxy and closes every connection.
func (p *TCPProxy) Close() error {
	err := p.ln.Close()
	p.Cut(Reset)
	p.wg.Wait()
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("close proxy: %w", err)
	}
	return nil
}

// ProxiedKubeconfig writes an admin kubeconfig whose server is the proxy at
// addr (host:port) instead of the API server itself. The API server's
// certificate is for 127.0.0.1, so TLS verification still holds.
func (cp *ControlPlane) ProxiedKubeconfig(path, addr string) error {
	c := *cp
	c.URL = "https://" + addr
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		return fmt.Errorf("proxied kubeconfig: %s is not on loopback: %w", addr, ErrNotLoopback)
	}
	return c.WriteKubeconfig(path, "admin", cp.adminToken)
}

// ErrNotLoopback refuses an address off this machine's loopback.
var ErrNotLoopback = errors.New("not a loopback address")

// APIServerAddr is the API server's host:port.
func (cp *ControlPlane) APIServerAddr() string { return strings.TrimPrefix(cp.URL, "https://") }
