package bfd

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"net/netip"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// Config is one session's.
type Config struct {
	// Peer is the remote system's address; an IPv6 link-local one with
	// its link as zone (fe80::1%eth1): the session then runs on that link
	// only, from the local link-local address there.
	Peer netip.Addr
	// Local is the session's source address; invalid: the kernel's choice
	// toward Peer (the listener is then bound to that address, with
	// Peer's zone when it is link-local).
	Local netip.Addr
	// Hops, when not 0, makes the session multihop (RFC 5883): packets
	// from at most Hops routers away are taken. 0: single hop, TTL 255.
	Hops uint8
	// MinRx is the least interval between received packets this system
	// wants (Required Min RX Interval), MinTx the least between the
	// packets it sends (Desired Min TX Interval).
	MinRx, MinTx time.Duration
	// Multiplier is the Detect Mult: the remote system declares the
	// session down after this many intervals without a packet.
	Multiplier uint8
}

// Event is a change of a session's state.
type Event struct {
	From, To State
	// RemoteAdminDown: the remote system took the session down on
	// purpose (AdminDown). RFC 5882 section 3.2: that is no failure of the
	// path, and the session's client keeps its own session up.
	RemoteAdminDown bool
	// Diagnostic is why the local system changed state (RFC 5880 section
	// 4.1): 1 detection time expired, 3 neighbor signaled session down.
	Diagnostic uint8
}

// Session is one BFD session. New, then Run until its context ends.
type Session struct {
	cfg      Config
	logger   logr.Logger
	onChange func(Event)
	port     uint16
	minTTL   int // the least TTL of a packet taken
	state    atomic.Uint32
	// notify tells Run that events are queued.
	notify chan struct{}

	// set by register (registry.mu)
	myDiscr  uint32
	listener *listener

	// set by open, in Run, before the session is scheduled: where its
	// packets go (they leave through its listener's socket)
	remote netip.AddrPort

	// listener.mu while the session runs: it is driven by its listener's
	// goroutines (packets received, packets due, detection times
	// expired), not by one of its own.
	running bool
	// lastTx is when the last periodic packet was sent, nextTx when the
	// next is due at the latest.
	lastTx          time.Time
	nextTx          time.Time
	detectAt        time.Time // zero: not counting
	events          []Event   // for Run to hand to onChange
	diag            uint8
	remoteDiscr     uint32
	remoteMinRx     time.Duration
	remoteDesiredTx time.Duration
	remoteMult      uint8
	// polling: a Poll Sequence runs (RFC 5880 section 6.5): the Desired
	// Min TX Interval sent changed, and the periodic packets carry the
	// Poll bit until a packet with the Final bit answers.
	polling bool
}

// slowTx is the least Desired Min TX Interval while a session is not Up
// (RFC 5880 section 6.8.3: "not less than one second"): a session that
// cannot come up costs both systems one packet a second, not one per
// configured interval, and the remote system's detection time for it is
// counted on that second until it is Up.
const slowTx = time.Second

// New returns a session in state Down; onChange, which may be nil, is
// called from Run on every change of state, in order.
func New(cfg Config, logger logr.Logger, onChange func(Event)) *Session {
	s := &Session{cfg: cfg, logger: logger.WithValues("peer", cfg.Peer), onChange: onChange,
		port: SingleHopPort, minTTL: 255, notify: make(chan struct{}, 1), remoteMinRx: time.Microsecond}
	if cfg.Hops > 0 {
		s.port, s.minTTL = MultihopPort, 256-int(cfg.Hops)
	}
	s.state.Store(uint32(Down))
	return s
}

// State is the session's state now.
func (s *Session) State() State { return State(s.state.Load()) } //nolint:gosec // a State stored

// openRetry is how often Run tries again to open the session's sockets
// (while the local address is not there yet, for example).
const openRetry = time.Second

// Run runs the session until ctx ends; it then tells the remote system that
// the session is down on purpose (AdminDown), so that it does not take the
// end for a failure. Once open, the session is driven by its listener
// (listener.tick sends its packets and counts its detection time,
// listener.serve hands it what it receives): Run only hands its changes to
// onChange, outside the listener's lock.
func (s *Session) Run(ctx context.Context) {
	retry := time.NewTimer(0)
	defer retry.Stop()
	for s.listener == nil {
		select {
		case <-ctx.Done():
			return
		case <-retry.C:
		}
		if err := s.open(); err != nil {
			s.logger.V(2).Info("BFD session not open yet", "err", err)
			retry.Reset(openRetry)
		}
	}
	defer s.close()
	s.logger.V(2).Info("BFD session open", "local", s.listener.tx.LocalAddr(), "discriminator", s.myDiscr)

	l := s.listener
	l.mu.Lock()
	s.running = true
	s.nextTx = time.Now() // the first packet at once
	l.schedule(s.nextTx)
	l.mu.Unlock()
	for {
		select {
		case <-ctx.Done():
			l.mu.Lock()
			s.running = false
			s.diag = diagAdminDown
			s.set(AdminDown, false)
			s.send(false)
			l.flush()
			l.mu.Unlock()
			s.handEvents()
			return
		case <-s.notify:
			s.handEvents()
		}
	}
}

// handEvents calls onChange with the changes queued since the last call.
func (s *Session) handEvents() {
	s.listener.mu.Lock()
	evs := s.events
	s.events = nil
	s.listener.mu.Unlock()
	for _, ev := range evs {
		s.onChange(ev)
	}
}

// deliver applies p, received at now (listener.mu held).
func (s *Session) deliver(p packet, now time.Time) {
	interval := s.txInterval()
	if s.handle(p) {
		s.detectAt = now.Add(s.detectionTime())
		s.listener.schedule(s.detectAt)
	}
	if s.txInterval() != interval {
		// The remote system changed its Required Min RX Interval (a
		// Poll, RFC 5880 section 6.8.3): it counts its detection time on
		// the new one from now on, so the next packet is timed on it
		// too, not on the old one (FRR, going Up, lowers 1 s to the
		// profile's 300 ms and expects a packet within 900 ms).
		s.nextTx = now.Add(s.jitter())
		s.listener.schedule(s.nextTx)
	}
}

// due does what is due at now (listener.mu held): the periodic packet,
// when due, or, with sendOpen (another session's packet is due now),
// as soon as it may be sent (openTx: then one wakeup and one system
// call send the packets of every session of the listener); and the end
// of the detection time. It returns the next time something is due.
func (s *Session) due(now time.Time, sendOpen bool) time.Time {
	if s.txDue(now) || (sendOpen && s.openTx(now)) {
		s.send(false)
		s.lastTx = now
		s.nextTx = now.Add(s.jitter())
	}
	if !s.detectAt.IsZero() && !now.Before(s.detectAt) {
		// A Detection Time without packets: the remote system's
		// discriminator is forgotten in any state (RFC 5880 section
		// 6.8.1), so that a remote system that restarted with a new one,
		// and waits to hear from this one, is not sent the old one for
		// ever (it takes no packet with an unknown Your Discriminator).
		s.detectAt = time.Time{}
		s.remoteDiscr = 0
		if st := s.State(); st == Init || st == Up {
			s.diag = diagTimeExpired
			s.set(Down, false)
		}
	}
	next := s.nextTx
	if !s.detectAt.IsZero() && s.detectAt.Before(next) {
		next = s.detectAt
	}
	return next
}

// handle applies p (RFC 5880 section 6.8.6) and reports whether it was
// taken (not in AdminDown): the detection time is then counted again.
func (s *Session) handle(p packet) bool {
	s.remoteDiscr = p.myDiscr
	s.remoteMinRx = time.Duration(p.requiredMinRx) * time.Microsecond
	s.remoteDesiredTx = time.Duration(p.desiredMinTx) * time.Microsecond
	s.remoteMult = p.mult
	st := s.State()
	switch {
	case st == AdminDown:
		return false
	case p.state == AdminDown:
		if st != Down {
			s.diag = diagNeighborDown
			s.set(Down, true)
		}
	case st == Down && p.state == Down:
		s.set(Init, false)
	case st == Down && p.state == Init, st == Init && (p.state == Init || p.state == Up):
		s.diag = diagNone
		s.set(Up, false)
	case st == Up && p.state == Down:
		s.diag = diagNeighborDown
		s.set(Down, false)
	}
	if p.final {
		s.polling = false // the Poll Sequence is answered
	}
	if p.poll {
		s.send(true)
	}
	return true
}

func (s *Session) set(to State, remoteAdmin bool) {
	before := s.desiredMinTx()
	from := State(s.state.Swap(uint32(to))) //nolint:gosec // a State stored
	if from == to {
		return
	}
	if s.desiredMinTx() != before && to != AdminDown {
		// Up, or no longer: the Desired Min TX Interval sent changes
		// (slowTx), which a Poll Sequence tells (RFC 5880 section 6.8.3).
		// AdminDown is the session's end: its last packet asks nothing.
		s.polling = true
	}
	l := s.logger.V(2)
	if from == Up || to == Up {
		l = s.logger
	}
	l.Info("BFD session state changed", "state", to, "previous", from, "diagnostic", s.diag, "remoteAdminDown", remoteAdmin)
	if s.onChange != nil {
		s.events = append(s.events, Event{From: from, To: to, RemoteAdminDown: remoteAdmin, Diagnostic: s.diag})
		select {
		case s.notify <- struct{}{}:
		default:
		}
	}
}

// detectionTime is the remote system's Detect Mult times the agreed
// interval of its packets (RFC 5880 section 6.8.4).
func (s *Session) detectionTime() time.Duration {
	return time.Duration(s.remoteMult) * max(s.cfg.MinRx, s.remoteDesiredTx)
}

// desiredMinTx is the Desired Min TX Interval this system sends: its
// configured one while Up, at least slowTx otherwise (RFC 5880 section
// 6.8.3).
func (s *Session) desiredMinTx() time.Duration {
	if s.State() == Up {
		return s.cfg.MinTx
	}
	return max(s.cfg.MinTx, slowTx)
}

// txInterval is the agreed interval of this system's packets: the larger
// of its Desired Min TX Interval and the remote's Required Min RX Interval
// (RFC 5880 section 6.8.7). Going Up lowers it at once (a shorter interval
// needs no wait for the Poll Sequence's answer); leaving Up raises it at
// once too, which the RFC allows for a session that is not Up.
func (s *Session) txInterval() time.Duration { return max(s.desiredMinTx(), s.remoteMinRx) }

// txDue reports whether the periodic packet is due at now.
func (s *Session) txDue(now time.Time) bool { return !now.Before(s.nextTx) }

// openTx reports whether the periodic packet may be sent at now: 75 % of
// the agreed interval after the last, the least RFC 5880 section 6.8.7
// allows. Sent then with the packets of other sessions, a packet comes at
// 75 to 100 % of the interval after the last (at most 90 % with a Detect
// Mult of 1: jitter), and the sessions of a listener soon share their
// wakeups.
func (s *Session) openTx(now time.Time) bool {
	return s.lastTx.IsZero() || !now.Before(s.lastTx.Add(s.txInterval()*3/4))
}

// jitter is the time to the next packet at the latest: the agreed interval
// less 0 to 20 % (10 to 20 % with a Detect Mult of 1), as RFC 5880 section
// 6.8.7 asks (openTx may send it sooner). It needs no secret: math/rand.
func (s *Session) jitter() time.Duration {
	interval := s.txInterval()
	least, spread := 0, 21 // less 0 to 20 %
	if s.cfg.Multiplier == 1 {
		least, spread = 10, 11 // less 10 to 20 %
	}
	cut := least + mrand.IntN(spread) //nolint:gosec // timing jitter, no secret
	return interval * time.Duration(100-cut) / 100
}

// send queues a packet on the listener (listener.mu held), which sends
// what is queued when it lets go of the lock (flush).
func (s *Session) send(final bool) {
	s.listener.queue(s.remote, s.packet(final).marshal())
}

// packet is the control packet this system sends now; final answers a
// Poll, and then carries no Poll of its own (RFC 5880 section 6.5: never
// both bits).
func (s *Session) packet(final bool) packet {
	return packet{diag: s.diag, state: s.State(), poll: s.polling && !final, final: final, mult: s.cfg.Multiplier,
		myDiscr: s.myDiscr, yourDiscr: s.remoteDiscr, desiredMinTx: micros(s.desiredMinTx()), requiredMinRx: micros(s.cfg.MinRx)}
}

func micros(d time.Duration) uint32 { return uint32(min(d/time.Microsecond, 1<<32-1)) } //nolint:gosec // bounded

// open registers the session with the listener of its source address,
// which receives and sends its packets.
func (s *Session) open() error {
	if s.cfg.Peer.IsLinkLocalUnicast() && s.cfg.Peer.Zone() == "" {
		return fmt.Errorf("bfd: link-local peer %s without its link as zone", s.cfg.Peer)
	}
	remote := netip.AddrPortFrom(s.cfg.Peer, s.port)
	local := s.cfg.Local
	if !local.IsValid() {
		probe, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(remote))
		if err != nil {
			return fmt.Errorf("bfd: no route to %s: %w", s.cfg.Peer, err)
		}
		local = udpAddr(probe.LocalAddr())
		_ = probe.Close()
	}
	s.remote = remote
	return register(s, netip.AddrPortFrom(onLink(local, s.cfg.Peer), s.port))
}

// onLink is local with peer's zone when both are link-local and local has
// none: a link-local address means something on one link only, and the
// listener and the sending socket are bound to that link by the zone (the
// kernel refuses a link-local address without one). The kernel's choice of
// a source toward a zoned peer carries the zone already.
func onLink(local, peer netip.Addr) netip.Addr {
	if local.IsLinkLocalUnicast() && local.Zone() == "" && peer.IsLinkLocalUnicast() {
		return local.WithZone(peer.Zone())
	}
	return local
}

// listenFrom opens a socket on a free port of 49152 to 65535 on local
// (RFC 5881 section 4), with TTL 255, to send the packets of the sessions
// from local: one source port for them all, as BIRD has one per
// interface (the RFC asks for one per session with a SHOULD; a remote
// system tells sessions apart by their discriminators).
func listenFrom(local netip.Addr) (*net.UDPConn, error) {
	var last error
	for range 32 {
		var b [2]byte
		_, _ = rand.Read(b[:])
		port := 49152 + binary.BigEndian.Uint16(b[:])%16384
		conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(local, port)))
		if errors.Is(err, syscall.EADDRINUSE) {
			last = err
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("bfd: socket on %s: %w", local, err)
		}
		if local.Is4() {
			err = ipv4.NewConn(conn).SetTTL(255)
		} else {
			err = ipv6.NewConn(conn).SetHopLimit(255)
		}
		if err != nil {
			_ = conn.Close()
			return nil, fmt.Errorf("bfd: TTL 255 on %s: %w", local, err)
		}
		return conn, nil
	}
	return nil, fmt.Errorf("bfd: no free source port on %s: %w", local, last)
}

// close sends nothing more; the listener closes with its last session.
func (s *Session) close() {
	unregister(s)
}
