package session

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/wire"
)

// openWait bounds the OPEN exchange: RFC 4271's large hold time before
// the session has one, shortened, since a router that answers at all does
// so at once.
const openWait = 30 * time.Second

// Session is an established BGP session. Send and Cease are safe to call
// while Run runs.
type Session struct {
	conn net.Conn
	neg  Negotiated

	wmu sync.Mutex // serializes writes
	w   *bufio.Writer
	r   *bufio.Reader
}

// Handlers are called by Run with what the router sends besides
// keepalives; nil ones are not called.
type Handlers struct {
	// EndOfRIB: the router's End-of-RIB of family f.
	EndOfRIB func(f wire.Family)
	// RouteRefresh: the router asks for every path of family f again.
	RouteRefresh func(f wire.Family)
}

// Establish connects to the router and exchanges OPENs and keepalives:
// it returns an established session, or why not. A refused OPEN is
// answered with a NOTIFICATION (ErrOpen); the router's NOTIFICATION gives
// ErrNotification.
func Establish(ctx context.Context, c Config) (*Session, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	conn, err := dial(ctx, &c)
	if err != nil {
		return nil, err
	}
	s := &Session{conn: conn, w: bufio.NewWriterSize(conn, 64<<10), r: bufio.NewReaderSize(conn, 16<<10)}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if err := s.open(ctx, &c); err != nil {
		_ = conn.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	_ = conn.SetDeadline(time.Time{})
	return s, nil
}

// open runs the OPEN exchange on a new connection.
func (s *Session) open(ctx context.Context, c *Config) error {
	_ = s.conn.SetDeadline(time.Now().Add(openWait))
	if err := ctx.Err(); err != nil {
		// ctx ended before the deadline above replaced the one that
		// ended it (Establish's AfterFunc).
		return err
	}
	local := openMessage(c)
	b, err := local.AppendTo(nil)
	if err != nil {
		return fmt.Errorf("encode OPEN: %w", err)
	}
	if err := s.SendRaw(b); err != nil {
		return err
	}
	t, body, err := s.read()
	if err != nil {
		return err
	}
	if t != wire.TypeOpen {
		s.notify(wire.ErrCodeFSM, 0)
		return fmt.Errorf("%w: %s before the OPEN", ErrOpen, t)
	}
	peer, err := wire.DecodeOpen(body)
	if err != nil {
		s.notify(wire.ErrCodeOpen, 0)
		return fmt.Errorf("%w: %w", ErrOpen, err)
	}
	neg, err := negotiate(c, local, peer)
	if err != nil {
		var oe *openError
		if errors.As(err, &oe) {
			s.notify(wire.ErrCodeOpen, oe.subcode)
		}
		return fmt.Errorf("%w: %w", ErrOpen, err)
	}
	s.neg = neg
	if err := s.SendRaw(wire.AppendKeepalive(nil)); err != nil {
		return err
	}
	if t, _, err = s.read(); err != nil {
		return err
	}
	if t != wire.TypeKeepalive {
		s.notify(wire.ErrCodeFSM, 0)
		return fmt.Errorf("%w: %s instead of the KEEPALIVE", ErrOpen, t)
	}
	return nil
}

// Negotiated is what the OPENs agreed on.
func (s *Session) Negotiated() Negotiated { return s.neg }

// LocalAddress is the session's own address (zoned on a link-local one).
func (s *Session) LocalAddress() net.Addr { return s.conn.LocalAddr() }

// SendRaw writes b, whole messages already encoded for the session
// (Negotiated.Options).
func (s *Session) SendRaw(b []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if _, err := s.w.Write(b); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	return nil
}

// Run keeps the session until it ends: keepalives every third of the hold
// time, the hold timer on what the router sends, and the router's
// messages to h. It returns why the session ended (ctx's error once ctx
// ends, after which the caller sends a Cease or closes); it closes nothing.
func (s *Session) Run(ctx context.Context, h Handlers) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	hold := s.neg.HoldTime
	if hold > 0 {
		go func() {
			t := time.NewTicker(hold / 3)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					if err := s.SendRaw(wire.AppendKeepalive(nil)); err != nil {
						cancel(err)
						_ = s.conn.SetReadDeadline(time.Unix(1, 0))
						return
					}
				}
			}
		}()
	}
	stop := context.AfterFunc(ctx, func() { _ = s.conn.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	for {
		if hold > 0 {
			_ = s.conn.SetReadDeadline(time.Now().Add(hold))
		}
		if ctx.Err() != nil {
			// ctx ended, and its AfterFunc's deadline may have come
			// before the one above replaced it: the read would wait
			// for the hold time.
			return context.Cause(ctx)
		}
		t, body, err := s.read()
		if err != nil {
			if cause := context.Cause(ctx); cause != nil {
				return cause
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				s.notify(wire.ErrCodeHoldTimer, 0)
				return ErrHoldTimer
			}
			return err
		}
		switch t {
		case wire.TypeUpdate:
			u, err := wire.DecodeUpdate(body, nil) // the speaker offered to receive no path identifiers
			if err != nil {
				s.notify(wire.ErrCodeUpdate, 0)
				return fmt.Errorf("UPDATE from the router: %w", err)
			}
			if u.EndOfRIB && h.EndOfRIB != nil {
				h.EndOfRIB(u.Family)
			}
		case wire.TypeRouteRefresh:
			rr, err := wire.DecodeRouteRefresh(body)
			if err == nil && h.RouteRefresh != nil {
				h.RouteRefresh(rr.Family)
			}
		case wire.TypeKeepalive:
		default:
			s.notify(wire.ErrCodeFSM, 0)
			return fmt.Errorf("%w: %s on an established session", ErrOpen, t)
		}
	}
}

// read reads one message: its type and body. The router's NOTIFICATION
// is an error (ErrNotification); so is a header the speaker cannot read,
// which it answers with a NOTIFICATION.
func (s *Session) read() (wire.Type, []byte, error) {
	var head [wire.HeaderLen]byte
	if _, err := io.ReadFull(s.r, head[:]); err != nil {
		return 0, nil, fmt.Errorf("receive: %w", err)
	}
	h, err := wire.ParseHeader(head[:])
	if err != nil {
		s.notify(wire.ErrCodeHeader, 0)
		return 0, nil, fmt.Errorf("message from the router: %w", err)
	}
	body := make([]byte, h.Len-wire.HeaderLen)
	if _, err := io.ReadFull(s.r, body); err != nil {
		return 0, nil, fmt.Errorf("receive: %w", err)
	}
	if h.Type == wire.TypeNotification {
		n, err := wire.DecodeNotification(body)
		if err != nil {
			return 0, nil, fmt.Errorf("%w: %w", ErrNotification, err)
		}
		return 0, nil, fmt.Errorf("%w: %s", ErrNotification, n)
	}
	return h.Type, body, nil
}

// notify sends a NOTIFICATION, best effort: the session ends after it.
func (s *Session) notify(code, subcode uint8) {
	_ = s.conn.SetWriteDeadline(time.Now().Add(time.Second))
	m := wire.Notification{Code: code, Subcode: subcode}
	_ = s.SendRaw(m.AppendTo(nil))
}

// Interrupt makes a blocked read or write return at once. Cease can
// still send its NOTIFICATION after it.
func (s *Session) Interrupt() { _ = s.conn.SetDeadline(time.Unix(1, 0)) }

// Cease ends the session with a Cease NOTIFICATION (administrative
// shutdown), so that the router withdraws the speaker's routes at once,
// and closes the connection.
func (s *Session) Cease() {
	s.notify(wire.ErrCodeCease, wire.CeaseAdministrativeShutdown)
	_ = s.conn.Close()
}

// Close closes the connection without a NOTIFICATION: a router with
// graceful restart keeps the speaker's routes until the next session's
// End-of-RIB or the restart time.
func (s *Session) Close() { _ = s.conn.Close() }
