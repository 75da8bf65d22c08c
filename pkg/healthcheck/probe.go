package healthcheck

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"time"
)

// maxBody is what is read of an answer's body: kube-proxy's is a small
// JSON object. A longer one, or one without a Content-Length, is not read
// to its end: the connection is closed instead of reused.
const maxBody = 4 << 10

// errBadAnswer is an answer that is not HTTP/1.x.
var errBadAnswer = errors.New("not an HTTP/1.x answer")

// prober checks one target over one kept-alive HTTP/1.1 connection. A
// check costs one write and one read on a connection that is already open
// (the slot writes its targets' requests, then reads their answers):
// the request is built once, no context or timer is made per check (the
// connection's deadline bounds it), and only the status line and the
// headers that say how long the body is are parsed. A replica checks
// thousands of nodes every second, so this is what a check costs it.
type prober struct {
	addr    string
	timeout time.Duration
	request []byte
	dialer  net.Dialer

	conn net.Conn
	br   *bufio.Reader
}

func newProber(addr netip.AddrPort, path string, timeout time.Duration) *prober {
	req := "GET " + path + " HTTP/1.1\r\nHost: " + addr.String() + "\r\nUser-Agent: metal-ccm-health-check\r\nAccept: */*\r\n\r\n"
	return &prober{addr: addr.String(), timeout: timeout, request: []byte(req)}
}

// check reports whether the target answers 200 within the timeout. A kept
// connection that fails other than by the timeout is replaced once within
// the same deadline: the server may have closed an idle one.
func (p *prober) check(ctx context.Context) bool {
	deadline := time.Now().Add(p.timeout)
	reused := p.conn != nil
	ok, err := p.roundTrip(ctx, deadline)
	if err != nil && reused && time.Now().Before(deadline) && !isTimeout(err) {
		p.close()
		ok, err = p.roundTrip(ctx, deadline)
	}
	if err != nil {
		p.close()
	}
	return ok
}

// send writes the request on the kept connection (the caller checks there
// is one), with deadline for the answer receive reads. The write has no
// deadline (one runtime timer less per check): a request of a hundred bytes
// never fills the socket's buffer, since at most one is unanswered on a
// connection at a time (a check that fails closes it).
func (p *prober) send(deadline time.Time) error {
	if err := p.conn.SetReadDeadline(deadline); err != nil {
		return err
	}
	_, err := p.conn.Write(p.request)
	return err
}

// receive reads the answer to what send wrote: whether it is 200; the
// connection is closed when the answer says so.
func (p *prober) receive() (bool, error) {
	status, keep, err := readAnswer(p.br)
	if err != nil {
		return false, err
	}
	if !keep {
		p.close()
	}
	return status == 200, nil
}

// roundTrip sends the request on the kept connection, dialing one if
// needed, and reads the answer.
func (p *prober) roundTrip(ctx context.Context, deadline time.Time) (bool, error) {
	if p.conn == nil {
		d := p.dialer
		d.Deadline = deadline
		c, err := d.DialContext(ctx, "tcp", p.addr)
		if err != nil {
			return false, err
		}
		p.conn = c
		if p.br == nil {
			p.br = bufio.NewReaderSize(c, 512)
		} else {
			p.br.Reset(c)
		}
	}
	if err := p.send(deadline); err != nil {
		return false, err
	}
	return p.receive()
}

// readAnswer reads an HTTP/1.x answer's status and headers and, when its
// length is known and small, its body; keep says whether the connection
// can carry the next request.
func readAnswer(br *bufio.Reader) (status int, keep bool, err error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return 0, false, err
	}
	// "HTTP/1.1 200 OK\r\n"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return 0, false, errBadAnswer
	}
	status, err = strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, false, errBadAnswer
	}
	length, keep := -1, line[7] == '1' // HTTP/1.1 keeps the connection by default
	for {
		h, err := br.ReadSlice('\n')
		if err != nil {
			return 0, false, err
		}
		h = bytes.TrimRight(h, "\r\n")
		if len(h) == 0 {
			break
		}
		name, value, ok := bytes.Cut(h, []byte(":"))
		if !ok {
			continue
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if n, err := strconv.Atoi(string(value)); err == nil && n >= 0 {
				length = n
			}
		case bytes.EqualFold(name, []byte("Connection")) && bytes.EqualFold(value, []byte("close")):
			keep = false
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			keep = false // chunked: not read; the connection goes
		}
	}
	if length < 0 || length > maxBody {
		return status, false, nil
	}
	if _, err := br.Discard(length); err != nil {
		return status, false, nil //nolint:nilerr // the status was read; only the connection is lost
	}
	return status, keep, nil
}

func (p *prober) close() {
	if p.conn != nil {
		_ = p.conn.Close()
		p.conn = nil
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
