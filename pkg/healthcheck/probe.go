package healthcheck

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"time"
)

// maxBody is what is read of an answer's body: kube-proxy's is a small
// JSON object; the rest of a larger one is not read, and the connection
// is not reused.
const maxBody = 4 << 10

// prober checks one target over one kept-alive HTTP/1.1 connection: the
// request is built once; a check is one write and one read on a connection
// that is already open (a Go http.Client would cost a goroutine pair and a
// pool lookup per check, which matters for thousands of nodes).
type prober struct {
	addr    netip.AddrPort
	timeout time.Duration
	request []byte
	dialer  net.Dialer

	conn net.Conn
	br   *bufio.Reader
}

func newProber(addr netip.AddrPort, path string, timeout time.Duration) *prober {
	req := "GET " + path + " HTTP/1.1\r\nHost: " + addr.String() + "\r\nUser-Agent: metal-ccm-health-check\r\nAccept: */*\r\n\r\n"
	return &prober{addr: addr, timeout: timeout, request: []byte(req)}
}

// check reports whether the target answers 200 within the timeout. A kept
// connection that fails is replaced once within the same deadline: the
// server may have closed an idle one.
func (p *prober) check(ctx context.Context) bool {
	deadline := time.Now().Add(p.timeout)
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	reused := p.conn != nil
	ok, err := p.roundTrip(ctx, deadline)
	if err != nil && reused && time.Now().Before(deadline) && !isTimeout(err) {
		ok, err = p.roundTrip(ctx, deadline)
	}
	if err != nil {
		p.close()
	}
	return ok
}

// roundTrip sends the request on the kept connection, dialing one if
// needed, and reads the answer.
func (p *prober) roundTrip(ctx context.Context, deadline time.Time) (bool, error) {
	if p.conn == nil {
		c, err := p.dialer.DialContext(ctx, "tcp", p.addr.String())
		if err != nil {
			return false, err
		}
		p.conn, p.br = c, bufio.NewReaderSize(c, 1024)
	}
	if err := p.conn.SetDeadline(deadline); err != nil {
		p.close()
		return false, err
	}
	if _, err := p.conn.Write(p.request); err != nil {
		p.close()
		return false, err
	}
	resp, err := http.ReadResponse(p.br, nil)
	if err != nil {
		p.close()
		return false, err
	}
	n, err := io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody+1))
	_ = resp.Body.Close()
	if err != nil || n > maxBody || resp.Close {
		p.close()
	}
	return resp.StatusCode == http.StatusOK, nil
}

func (p *prober) close() {
	if p.conn != nil {
		_ = p.conn.Close()
		p.conn, p.br = nil, nil
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
