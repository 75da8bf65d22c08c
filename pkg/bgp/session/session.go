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

	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
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
	opts *bgp.MarshallingOption

	wmu sync.Mutex // serializes writes
	w   *bufio.Writer
	r   *bufio.Reader
}

// Handlers are called by Run with what the router sends besides
// keepalives; nil ones are not called.
type Handlers struct {
	// EndOfRIB: the router's End-of-RIB of family f.
	EndOfRIB func(f bgp.Family)
	// RouteRefresh: the router asks for every path of family f again.
	RouteRefresh func(f bgp.Family)
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
	s := &Session{conn: conn, w: bufio.NewWriterSize(conn, 64<<10), r: bufio.NewReaderSize(conn, 16<<10),
		opts: &bgp.MarshallingOption{}}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if err := s.open(&c); err != nil {
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
func (s *Session) open(c *Config) error {
	_ = s.conn.SetDeadline(time.Now().Add(openWait))
	open, err := openMessage(c)
	if err != nil {
		return fmt.Errorf("encode OPEN: %w", err)
	}
	if err := s.Send(open); err != nil {
		return err
	}
	m, err := s.read()
	if err != nil {
		return err
	}
	body, ok := m.Body.(*bgp.BGPOpen)
	if !ok {
		s.notify(bgp.BGP_ERROR_FSM_ERROR, 0)
		return fmt.Errorf("%w: message type %d before the OPEN", ErrOpen, m.Header.Type)
	}
	neg, err := negotiate(c, body)
	if err != nil {
		var oe *openError
		if errors.As(err, &oe) {
			s.notify(bgp.BGP_ERROR_OPEN_MESSAGE_ERROR, oe.subcode)
		}
		return fmt.Errorf("%w: %w", ErrOpen, err)
	}
	s.neg = neg
	s.opts.Use2ByteAS = !neg.FourOctetAS
	s.opts.AddPath = map[bgp.Family]bgp.BGPAddPathMode{}
	for f, on := range neg.AddPath {
		if on {
			s.opts.AddPath[f] = bgp.BGP_ADD_PATH_SEND
		}
	}
	if err := s.Send(bgp.NewBGPKeepAliveMessage()); err != nil {
		return err
	}
	m, err = s.read()
	if err != nil {
		return err
	}
	if m.Header.Type != bgp.BGP_MSG_KEEPALIVE {
		s.notify(bgp.BGP_ERROR_FSM_ERROR, 0)
		return fmt.Errorf("%w: message type %d instead of the KEEPALIVE", ErrOpen, m.Header.Type)
	}
	return nil
}

// Negotiated is what the OPENs agreed on.
func (s *Session) Negotiated() Negotiated { return s.neg }

// LocalAddress is the session's own address (zoned on a link-local one).
func (s *Session) LocalAddress() net.Addr { return s.conn.LocalAddr() }

// Send writes msgs, encoded for the session (ADD-PATH, 2- or 4-octet AS
// numbers), in order.
func (s *Session) Send(msgs ...*bgp.BGPMessage) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	for _, m := range msgs {
		b, err := m.Serialize(s.opts)
		if err != nil {
			return fmt.Errorf("encode message type %d: %w", m.Header.Type, err)
		}
		if _, err := s.w.Write(b); err != nil {
			return fmt.Errorf("send: %w", err)
		}
	}
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	return nil
}

// SendRaw writes b, whole messages already encoded for the session.
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
					if err := s.Send(bgp.NewBGPKeepAliveMessage()); err != nil {
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
		m, err := s.read()
		if err != nil {
			if cause := context.Cause(ctx); cause != nil {
				return cause
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				s.notify(bgp.BGP_ERROR_HOLD_TIMER_EXPIRED, 0)
				return ErrHoldTimer
			}
			return err
		}
		switch b := m.Body.(type) {
		case *bgp.BGPUpdate:
			if f, eor := endOfRIB(b); eor && h.EndOfRIB != nil {
				h.EndOfRIB(f)
			}
		case *bgp.BGPRouteRefresh:
			if h.RouteRefresh != nil {
				h.RouteRefresh(bgp.NewFamily(b.AFI, b.SAFI))
			}
		case *bgp.BGPKeepAlive:
		default:
			s.notify(bgp.BGP_ERROR_FSM_ERROR, 0)
			return fmt.Errorf("%w: message type %d on an established session", ErrOpen, m.Header.Type)
		}
	}
}

// endOfRIB reports whether u is an End-of-RIB marker, and of which family.
func endOfRIB(u *bgp.BGPUpdate) (bgp.Family, bool) {
	if len(u.WithdrawnRoutes) == 0 && len(u.PathAttributes) == 0 && len(u.NLRI) == 0 {
		return bgp.RF_IPv4_UC, true
	}
	if len(u.WithdrawnRoutes) == 0 && len(u.NLRI) == 0 && len(u.PathAttributes) == 1 {
		if un, ok := u.PathAttributes[0].(*bgp.PathAttributeMpUnreachNLRI); ok && len(un.Value) == 0 {
			return bgp.NewFamily(un.AFI, un.SAFI), true
		}
	}
	return 0, false
}

// read reads one message. The router's NOTIFICATION is an error
// (ErrNotification); so is a message the speaker cannot decode, which it
// answers with a NOTIFICATION.
func (s *Session) read() (*bgp.BGPMessage, error) {
	head := make([]byte, bgp.BGP_HEADER_LENGTH)
	if _, err := io.ReadFull(s.r, head); err != nil {
		return nil, fmt.Errorf("receive: %w", err)
	}
	var h bgp.BGPHeader
	if err := h.DecodeFromBytes(head); err != nil {
		s.notify(bgp.BGP_ERROR_MESSAGE_HEADER_ERROR, 0)
		return nil, fmt.Errorf("decode message header: %w", err)
	}
	if h.Len < bgp.BGP_HEADER_LENGTH || h.Len > bgp.BGP_MAX_MESSAGE_LENGTH {
		s.notify(bgp.BGP_ERROR_MESSAGE_HEADER_ERROR, bgp.BGP_ERROR_SUB_BAD_MESSAGE_LENGTH)
		return nil, fmt.Errorf("message length %d", h.Len)
	}
	body := make([]byte, int(h.Len)-bgp.BGP_HEADER_LENGTH)
	if _, err := io.ReadFull(s.r, body); err != nil {
		return nil, fmt.Errorf("receive: %w", err)
	}
	m, err := bgp.ParseBGPBody(&h, body)
	if err != nil {
		s.notify(bgp.BGP_ERROR_UPDATE_MESSAGE_ERROR, 0)
		return nil, fmt.Errorf("decode message type %d: %w", h.Type, err)
	}
	if n, ok := m.Body.(*bgp.BGPNotification); ok {
		return nil, fmt.Errorf("%w: code %d, subcode %d", ErrNotification, n.ErrorCode, n.ErrorSubcode)
	}
	return m, nil
}

// notify sends a NOTIFICATION, best effort: the session ends after it.
func (s *Session) notify(code, subcode uint8) {
	_ = s.conn.SetWriteDeadline(time.Now().Add(time.Second))
	_ = s.Send(bgp.NewBGPNotificationMessage(code, subcode, nil))
}

// Cease ends the session with a Cease NOTIFICATION (administrative
// shutdown), so that the router withdraws the speaker's routes at once,
// and closes the connection.
func (s *Session) Cease() {
	s.notify(bgp.BGP_ERROR_CEASE, bgp.BGP_ERROR_SUB_ADMINISTRATIVE_SHUTDOWN)
	_ = s.conn.Close()
}

// Close closes the connection without a NOTIFICATION: a router with
// graceful restart keeps the speaker's routes until the next session's
// End-of-RIB or the restart time.
func (s *Session) Close() { _ = s.conn.Close() }
