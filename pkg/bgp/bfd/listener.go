package bfd

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// The destination ports of control packets.
const (
	SingleHopPort = 3784 // RFC 5881
	MultihopPort  = 4784 // RFC 5883
)

// registry is the process's listeners and sessions: one listener per local
// address and port, shared by the sessions from that address.
var registry = struct {
	mu        sync.Mutex
	listeners map[netip.AddrPort]*listener
	byDiscr   map[uint32]*Session
}{listeners: map[netip.AddrPort]*listener{}, byDiscr: map[uint32]*Session{}}

// listener receives the control packets sent to one local address and port,
// and drives its sessions: serve hands each packet to its session, tick
// sends the packets due and ends the detection times. Two goroutines for
// all the sessions on an address, not one each, and the packets due about
// the same time sent at one wakeup: what an idle process with BFD costs is
// mostly its wakeups, per packet.
type listener struct {
	addr netip.AddrPort
	conn *net.UDPConn
	// readBatch reads the packets waiting (at least one), each with its
	// TTL (hop limit) in its OOB; ttlOf gives it, -1 if not there.
	readBatch func(ms []ipv4.Message) (int, error)
	ttlOf     func(oob []byte) int
	oobLen    int
	// tx sends the sessions' packets, writeBatch many in one call.
	tx         *net.UDPConn
	writeBatch func(ms []ipv4.Message) (int, error)
	// sessions by peer address (registry.mu).
	sessions map[netip.Addr]*Session

	// mu guards the running sessions' state, the timer and pending.
	mu sync.Mutex
	// pending are the packets queued to send (flush).
	pending []ipv4.Message
	// timer wakes tick at armed (zero: not armed).
	timer *time.Timer
	armed time.Time
	done  chan struct{}
}

// register gives s a discriminator and its listener, which it opens when s
// is the first session on its local address and port.
func register(s *Session, local netip.AddrPort) error {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	l := registry.listeners[local]
	if l == nil {
		var err error
		if l, err = listen(local); err != nil {
			return err
		}
		registry.listeners[local] = l
		go l.serve()
		go l.tick()
	}
	if l.sessions[s.cfg.Peer] != nil {
		return fmt.Errorf("bfd: a session with %s from %s already runs in this process", s.cfg.Peer, local)
	}
	l.sessions[s.cfg.Peer] = s
	for s.myDiscr == 0 || registry.byDiscr[s.myDiscr] != nil {
		var b [4]byte
		_, _ = rand.Read(b[:])
		s.myDiscr = binary.BigEndian.Uint32(b[:])
	}
	registry.byDiscr[s.myDiscr] = s
	s.listener = l
	return nil
}

// unregister removes s, and closes its listener when it was the last
// session on it.
func unregister(s *Session) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	l := s.listener
	if l == nil {
		return
	}
	delete(l.sessions, s.cfg.Peer)
	delete(registry.byDiscr, s.myDiscr)
	s.listener = nil
	if len(l.sessions) == 0 {
		delete(registry.listeners, l.addr)
		l.close()
	}
}

// listen opens the listener on local, asking for each packet's TTL (hop
// limit), and its sending socket. A link-local local address has its link
// as zone: the sockets are then bound to that link, and take only the
// packets sent to that address there. No SO_REUSEADDR: another process on
// the same address and port must make this fail, not take half of the
// packets.
func listen(local netip.AddrPort) (*listener, error) {
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(local))
	if err != nil {
		return nil, fmt.Errorf("bfd: listen on %s: %w", local, err)
	}
	tx, err := listenFrom(local.Addr())
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	l := &listener{addr: local, conn: conn, tx: tx, sessions: map[netip.Addr]*Session{}, timer: time.NewTimer(time.Hour), done: make(chan struct{})}
	l.timer.Stop()
	if local.Addr().Is4() {
		pc := ipv4.NewPacketConn(conn)
		err = pc.SetControlMessage(ipv4.FlagTTL, true)
		l.readBatch = func(ms []ipv4.Message) (int, error) { return pc.ReadBatch(ms, 0) }
		l.oobLen = len(ipv4.NewControlMessage(ipv4.FlagTTL))
		l.ttlOf = func(oob []byte) int {
			var cm ipv4.ControlMessage
			if cm.Parse(oob) != nil {
				return -1
			}
			return cm.TTL
		}
		txc := ipv4.NewPacketConn(tx)
		l.writeBatch = func(ms []ipv4.Message) (int, error) { return txc.WriteBatch(ms, 0) }
	} else {
		pc := ipv6.NewPacketConn(conn)
		err = pc.SetControlMessage(ipv6.FlagHopLimit, true)
		l.readBatch = func(ms []ipv4.Message) (int, error) { return pc.ReadBatch(ms, 0) }
		l.oobLen = len(ipv6.NewControlMessage(ipv6.FlagHopLimit))
		l.ttlOf = func(oob []byte) int {
			var cm ipv6.ControlMessage
			if cm.Parse(oob) != nil {
				return -1
			}
			return cm.HopLimit
		}
		txc := ipv6.NewPacketConn(tx)
		l.writeBatch = func(ms []ipv4.Message) (int, error) { return txc.WriteBatch(ms, 0) }
	}
	if err != nil {
		_ = conn.Close()
		_ = tx.Close()
		return nil, fmt.Errorf("bfd: receive the TTL on %s: %w", local, err)
	}
	return l, nil
}

// queue adds a packet to send to dst at the next flush (l.mu held).
func (l *listener) queue(dst netip.AddrPort, b []byte) {
	l.pending = append(l.pending, ipv4.Message{Buffers: [][]byte{b}, Addr: net.UDPAddrFromAddrPort(dst)})
}

// flush sends the queued packets, as many as one system call takes at a
// time (l.mu held). A failed send is a lost packet: detection is the
// remote system's.
func (l *listener) flush() {
	for sent := 0; sent < len(l.pending); {
		n, err := l.writeBatch(l.pending[sent:])
		if err != nil || n == 0 {
			break
		}
		sent += n
	}
	clear(l.pending)
	l.pending = l.pending[:0]
}

func udpAddr(a net.Addr) netip.Addr {
	if u, ok := a.(*net.UDPAddr); ok {
		return u.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}

// close ends serve and tick.
func (l *listener) close() {
	_ = l.conn.Close()
	_ = l.tx.Close()
	close(l.done)
}

// schedule makes tick run at t at the latest (l.mu held).
func (l *listener) schedule(t time.Time) {
	if !l.armed.IsZero() && !t.Before(l.armed) {
		return
	}
	l.armed = t
	l.timer.Reset(time.Until(t))
}

// tick does what is due for the running sessions each time the timer
// fires, and sets it for the next thing due, until the listener closes.
func (l *listener) tick() {
	for {
		select {
		case <-l.done:
			l.timer.Stop()
			return
		case <-l.timer.C:
		}
		registry.mu.Lock()
		sessions := make([]*Session, 0, len(l.sessions))
		for _, s := range l.sessions {
			sessions = append(sessions, s)
		}
		registry.mu.Unlock()
		l.mu.Lock()
		now := time.Now()
		// A packet due now wakes the listener: the packets that may be
		// sent now go with it.
		sendOpen := false
		for _, s := range sessions {
			sendOpen = sendOpen || (s.running && s.txDue(now))
		}
		var next time.Time
		for _, s := range sessions {
			if !s.running {
				continue
			}
			if t := s.due(now, sendOpen); next.IsZero() || t.Before(next) {
				next = t
			}
		}
		l.flush()
		l.armed = time.Time{}
		if !next.IsZero() {
			l.schedule(next)
		}
		l.mu.Unlock()
	}
}

// batchSize is how many packets serve reads in one system call.
const batchSize = 16

// serve hands each valid packet to its session until the listener closes,
// reading what has arrived in one system call and handing it over under
// one lock.
func (l *listener) serve() {
	ms := make([]ipv4.Message, batchSize)
	for i := range ms {
		ms[i].Buffers = [][]byte{make([]byte, 512)}
		ms[i].OOB = make([]byte, l.oobLen)
	}
	type got struct {
		s *Session
		p packet
	}
	var batch []got
	for {
		n, err := l.readBatch(ms)
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue
		}
		batch = batch[:0]
		for i := range ms[:n] {
			m := &ms[i]
			p, err := parsePacket(m.Buffers[0][:m.N])
			if err != nil {
				continue
			}
			s := l.find(p, l.source(udpAddr(m.Addr)))
			if s == nil || l.ttlOf(m.OOB[:m.NN]) < s.minTTL {
				// Not ours, or from further away than the session allows
				// (RFC 5881 section 5: a single-hop packet arrives with 255).
				continue
			}
			batch = append(batch, got{s, p})
		}
		if len(batch) == 0 {
			continue
		}
		l.mu.Lock()
		now := time.Now()
		for _, g := range batch {
			if g.s.running {
				g.s.deliver(g.p, now)
			}
		}
		l.flush() // the answers to Polls
		l.mu.Unlock()
	}
}

// source is a packet's source address as the sessions name their peers.
// A link-local listener is bound to one link (its zone), so a link-local
// source is on that link: it takes the listener's zone, whatever the
// kernel's interface index became (Go names it by the interface's name
// when it can, else by the number).
func (l *listener) source(src netip.Addr) netip.Addr {
	if z := l.addr.Addr().Zone(); z != "" && src.IsLinkLocalUnicast() {
		return src.WithZone(z)
	}
	return src
}

// find is the session of p: by its Your Discriminator, else by its source
// (RFC 5880 section 6.8.6; a session's first packets carry none).
func (l *listener) find(p packet, src netip.Addr) *Session {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if p.yourDiscr != 0 {
		s := registry.byDiscr[p.yourDiscr]
		if s == nil || s.listener != l || s.cfg.Peer != src {
			return nil
		}
		return s
	}
	return l.sessions[src]
}
