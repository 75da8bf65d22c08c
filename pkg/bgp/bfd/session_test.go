package bfd

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/net/ipv4"
)

// Loopback addresses of their own, apart from other tests' sockets.
var (
	addrA = netip.MustParseAddr("127.0.0.77")
	addrB = netip.MustParseAddr("127.0.0.78")
)

func TestPacketRoundTrip(t *testing.T) {
	p := packet{diag: 3, state: Init, poll: true, mult: 3, myDiscr: 7, yourDiscr: 9, desiredMinTx: 300000, requiredMinRx: 200000}
	got, err := parsePacket(p.marshal())
	if err != nil || got != p {
		t.Fatalf("round trip: %+v, %v; want %+v", got, err, p)
	}
	for _, tc := range []struct {
		name string
		edit func(b []byte)
	}{
		{"version 0", func(b []byte) { b[0] &= 0x1f }},
		{"short length", func(b []byte) { b[3] = 20 }},
		{"authentication", func(b []byte) { b[1] |= flagAuth }},
		{"multipoint", func(b []byte) { b[1] |= flagMulti }},
		{"multiplier 0", func(b []byte) { b[2] = 0 }},
		{"my discriminator 0", func(b []byte) { copy(b[4:8], []byte{0, 0, 0, 0}) }},
		{"your discriminator 0 in Init", func(b []byte) { copy(b[8:12], []byte{0, 0, 0, 0}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := p.marshal()
			tc.edit(b)
			if _, err := parsePacket(b); err == nil {
				t.Errorf("taken: %x", b)
			}
		})
	}
}

// events records a session's changes.
type events struct {
	mu  sync.Mutex
	all []Event
}

func (e *events) add(ev Event) { e.mu.Lock(); e.all = append(e.all, ev); e.mu.Unlock() }

func (e *events) last() (Event, int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.all) == 0 {
		return Event{}, 0
	}
	return e.all[len(e.all)-1], len(e.all)
}

func waitState(t *testing.T, s *Session, want State) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for s.State() != want {
		if time.Now().After(deadline) {
			t.Fatalf("session with %s: state %s, want %s", s.cfg.Peer, s.State(), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func start(t *testing.T, s *Session) context.CancelFunc {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	stop := func() { cancel(); <-done }
	t.Cleanup(stop)
	return stop
}

// TestTwoSessions: two sessions of this package, each the other's peer,
// come up; one ending tells the other (AdminDown), which goes down without
// counting it a failure, and both come up again.
func TestTwoSessions(t *testing.T) {
	cfg := Config{MinRx: 50 * time.Millisecond, MinTx: 50 * time.Millisecond, Multiplier: 3}
	ca, cb := cfg, cfg
	ca.Local, ca.Peer = addrA, addrB
	cb.Local, cb.Peer = addrB, addrA
	var ea events
	a := New(ca, logr.Discard(), ea.add)
	b := New(cb, logr.Discard(), nil)
	start(t, a)
	stopB := start(t, b)
	waitState(t, a, Up)
	waitState(t, b, Up)
	stopB()
	waitState(t, a, Down)
	if ev, _ := ea.last(); !ev.RemoteAdminDown || ev.From != Up {
		t.Errorf("the peer's end: %+v, want Up to Down with RemoteAdminDown", ev)
	}
	b = New(cb, logr.Discard(), nil)
	start(t, b)
	waitState(t, a, Up)
	waitState(t, b, Up)
}

// remote is the test's hand-made remote system.
type remote struct {
	t    *testing.T
	conn *net.UDPConn
	to   *net.UDPAddr
}

func newRemote(t *testing.T, ttl int) *remote {
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: addrB.AsSlice(), Port: SingleHopPort})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if err := ipv4.NewConn(conn).SetTTL(ttl); err != nil {
		t.Fatal(err)
	}
	return &remote{t: t, conn: conn, to: &net.UDPAddr{IP: addrA.AsSlice(), Port: SingleHopPort}}
}

func (r *remote) send(p packet) {
	r.t.Helper()
	if _, err := r.conn.WriteToUDP(p.marshal(), r.to); err != nil {
		r.t.Fatal(err)
	}
}

// drain drops the packets the session sent so far.
func (r *remote) drain() {
	buf := make([]byte, 512)
	for {
		_ = r.conn.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		if _, err := r.conn.Read(buf); err != nil {
			return
		}
	}
}

// next is the next packet from the session that matches ok.
func (r *remote) next(ok func(packet) bool) packet {
	r.t.Helper()
	buf := make([]byte, 512)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		_ = r.conn.SetReadDeadline(deadline)
		n, err := r.conn.Read(buf)
		if err != nil {
			r.t.Fatal(err)
		}
		p, err := parsePacket(buf[:n])
		if err != nil {
			r.t.Fatalf("the session sent an invalid packet: %v", err)
		}
		if ok(p) {
			return p
		}
	}
	r.t.Fatal("no such packet from the session")
	return packet{}
}

// TestStateMachine drives a session with hand-made packets: the three-way
// handshake, a poll answered with a final, and the detection time passing
// without packets.
func TestStateMachine(t *testing.T) {
	r := newRemote(t, 255)
	var ev events
	s := New(Config{Local: addrA, Peer: addrB, MinRx: 50 * time.Millisecond, MinTx: 50 * time.Millisecond, Multiplier: 3}, logr.Discard(), ev.add)
	start(t, s)
	first := r.next(func(p packet) bool { return true })
	if first.state != Down || first.yourDiscr != 0 || first.desiredMinTx != 1_000_000 || first.requiredMinRx != 50000 || first.mult != 3 {
		t.Fatalf("first packet %+v", first)
	}
	const mine = 4242
	// A long Desired Min TX: the session sends its Init packet after a
	// second (slow start) and must not time out before.
	r.send(packet{state: Down, mult: 3, myDiscr: mine, desiredMinTx: 10_000_000, requiredMinRx: 50000})
	waitState(t, s, Init)
	p := r.next(func(p packet) bool { return p.state == Init })
	if p.yourDiscr != mine {
		t.Errorf("Init packet %+v: your discriminator, want %d", p, mine)
	}
	r.send(packet{state: Up, mult: 3, myDiscr: mine, yourDiscr: first.myDiscr, desiredMinTx: 50000, requiredMinRx: 50000, poll: true})
	waitState(t, s, Up)
	r.next(func(p packet) bool { return p.final && p.state == Up })
	// No more packets: down after the detection time, a failure.
	waitState(t, s, Down)
	if e, _ := ev.last(); e.RemoteAdminDown || e.From != Up || e.Diagnostic != diagTimeExpired {
		t.Errorf("detection time passed: %+v", e)
	}
	if p := r.next(func(p packet) bool { return p.state == Down }); p.diag != diagTimeExpired || p.yourDiscr != 0 {
		t.Errorf("packet after the failure %+v", p)
	}
}

// TestSingleHopTTL: a single-hop session takes no packet that crossed a
// router (TTL below 255).
func TestSingleHopTTL(t *testing.T) {
	r := newRemote(t, 254)
	s := New(Config{Local: addrA, Peer: addrB, MinRx: 50 * time.Millisecond, MinTx: 50 * time.Millisecond, Multiplier: 3}, logr.Discard(), nil)
	start(t, s)
	first := r.next(func(packet) bool { return true })
	// Answer the session's Down packets for a while: each would move it
	// to Init if it were taken.
	for range 5 {
		r.send(packet{state: Down, mult: 3, myDiscr: 99, desiredMinTx: 50000, requiredMinRx: 50000})
		r.next(func(p packet) bool { return p.myDiscr == first.myDiscr })
	}
	if st := s.State(); st != Down {
		t.Errorf("state %s after packets with TTL 254, want down", st)
	}
}

// TestRemoteLowersRequiredMinRx: a remote system that, going Up, lowers
// its Required Min RX Interval with a Poll (FRR: from 1 s while down to
// its profile's interval) gets packets at the new interval at once, not
// after one more packet at the old one: it counts its detection time on
// the new interval from the Poll on. Here the old interval is a minute, so
// a session still on it sends nothing within the wait.
func TestRemoteLowersRequiredMinRx(t *testing.T) {
	r := newRemote(t, 255)
	s := New(Config{Local: addrA, Peer: addrB, MinRx: 50 * time.Millisecond, MinTx: 50 * time.Millisecond, Multiplier: 3}, logr.Discard(), nil)
	start(t, s)
	first := r.next(func(packet) bool { return true })
	const mine = 5151
	// A minute while coming up; a long Desired Min TX keeps this
	// session's detection time past the test.
	r.send(packet{state: Down, mult: 3, myDiscr: mine, desiredMinTx: 10_000_000, requiredMinRx: 60_000_000})
	waitState(t, s, Init)
	r.send(packet{state: Up, poll: true, mult: 3, myDiscr: mine, yourDiscr: first.myDiscr, desiredMinTx: 10_000_000, requiredMinRx: 60_000_000})
	waitState(t, s, Up)
	// A packet timed on the session's own 50 ms before it heard of the
	// minute goes out meanwhile (no wait on it: the test only fails the
	// less for a slow machine); the rest are a minute away.
	time.Sleep(300 * time.Millisecond)
	r.drain()
	r.send(packet{state: Up, poll: true, mult: 3, myDiscr: mine, yourDiscr: first.myDiscr, desiredMinTx: 10_000_000, requiredMinRx: 50_000})
	r.next(func(p packet) bool { return p.final })
	for range 3 {
		r.next(func(p packet) bool { return p.state == Up && !p.final })
	}
}

// TestRemoteRestarts: the remote system restarts with a new discriminator,
// first telling (Down with Your Discriminator 0), then after taking its
// session down on purpose and going silent, as a router does when its BGP
// session's neighbour is deleted and made again; the session comes up
// with the new discriminator each time. After the silence it sends Your
// Discriminator 0 (RFC 5880 section 6.8.1): a remote system takes no
// packet with a discriminator it does not know, so one that waits to hear
// first would never come up while the old one is sent.
func TestRemoteRestarts(t *testing.T) {
	r := newRemote(t, 255)
	var ev events
	s := New(Config{Local: addrA, Peer: addrB, MinRx: 50 * time.Millisecond, MinTx: 50 * time.Millisecond, Multiplier: 3}, logr.Discard(), ev.add)
	start(t, s)
	first := r.next(func(packet) bool { return true })
	// up brings the session up with the remote's discriminator discr from
	// Down (packets with a long Desired Min TX: no detection time passes).
	up := func(discr uint32) {
		t.Helper()
		r.send(packet{state: Down, mult: 3, myDiscr: discr, desiredMinTx: 10_000_000, requiredMinRx: 50_000})
		waitState(t, s, Init)
		if p := r.next(func(p packet) bool { return p.state == Init }); p.yourDiscr != discr {
			t.Fatalf("Init packet %+v, want your discriminator %d", p, discr)
		}
		r.send(packet{state: Up, mult: 3, myDiscr: discr, yourDiscr: first.myDiscr, desiredMinTx: 10_000_000, requiredMinRx: 50_000})
		waitState(t, s, Up)
	}
	up(1001)
	// Restart, telling: Down from a new discriminator, which knows none
	// of this session's yet.
	r.send(packet{state: Down, mult: 3, myDiscr: 2002, desiredMinTx: 10_000_000, requiredMinRx: 50_000})
	waitState(t, s, Down)
	if e, _ := ev.last(); e.From != Up || e.RemoteAdminDown || e.Diagnostic != diagNeighborDown {
		t.Errorf("the remote restarted: %+v, want Up to Down, neighbor signaled down", e)
	}
	up(2002)
	// AdminDown, then silence: the session goes down, and after the
	// detection time its packets carry no discriminator of the remote.
	r.send(packet{state: AdminDown, diag: diagAdminDown, mult: 3, myDiscr: 2002, yourDiscr: first.myDiscr, desiredMinTx: 50_000, requiredMinRx: 50_000})
	waitState(t, s, Down)
	r.next(func(p packet) bool { return p.state == Down && p.yourDiscr == 0 })
	up(3003)
}

// TestSlowStart: while not Up a session sends a Desired Min TX Interval of
// at least one second and times its packets on it (RFC 5880 section
// 6.8.3); going Up it sends its configured interval with the Poll bit until
// the remote system answers with the Final bit, and going down again it
// falls back to the second, polling again. The session is driven by
// packets handed to it directly: no sockets, no timers.
func TestSlowStart(t *testing.T) {
	const mine = 77
	type want struct {
		state      State
		desiredTx  uint32 // in the packet sent, microseconds
		poll       bool
		txInterval time.Duration
	}
	s := New(Config{Local: addrA, Peer: addrB, MinRx: 300 * time.Millisecond, MinTx: 300 * time.Millisecond, Multiplier: 3}, logr.Discard(), nil)
	check := func(step string, w want) {
		t.Helper()
		p := s.packet(false)
		if p.state != w.state || p.desiredMinTx != w.desiredTx || p.poll != w.poll || p.final || p.requiredMinRx != 300_000 {
			t.Errorf("%s: packet %+v, want state %s, desired min TX %d µs, poll %t, required min RX 300000 µs",
				step, p, w.state, w.desiredTx, w.poll)
		}
		if got := s.txInterval(); got != w.txInterval {
			t.Errorf("%s: transmit interval %s, want %s", step, got, w.txInterval)
		}
		if f := s.packet(true); f.poll || !f.final {
			t.Errorf("%s: an answer to a Poll %+v, want Final without Poll", step, f)
		}
	}
	from := func(st State, final bool) packet {
		return packet{state: st, final: final, mult: 3, myDiscr: mine, yourDiscr: 1, desiredMinTx: 1_000_000, requiredMinRx: 300_000}
	}
	check("new", want{Down, 1_000_000, false, time.Second})
	s.handle(packet{state: Down, mult: 3, myDiscr: mine, desiredMinTx: 1_000_000, requiredMinRx: 300_000})
	check("init", want{Init, 1_000_000, false, time.Second})
	s.handle(from(Up, false))
	check("up", want{Up, 300_000, true, 300 * time.Millisecond})
	s.handle(from(Up, false))
	check("up, no answer yet", want{Up, 300_000, true, 300 * time.Millisecond})
	s.handle(from(Up, true))
	check("up, answered", want{Up, 300_000, false, 300 * time.Millisecond})
	// The remote asks for 2 s between packets: its interval, the larger.
	slow := from(Up, false)
	slow.requiredMinRx = 2_000_000
	s.handle(slow)
	check("remote slower", want{Up, 300_000, false, 2 * time.Second})
	s.handle(from(Up, false))
	s.handle(from(Down, false))
	check("down", want{Down, 1_000_000, true, time.Second})
	s.handle(from(Down, true))
	check("down, answered", want{Init, 1_000_000, false, time.Second})

	// A configured interval above the second is kept in every state.
	long := New(Config{Local: addrA, Peer: addrB, MinRx: 2 * time.Second, MinTx: 2 * time.Second, Multiplier: 3}, logr.Discard(), nil)
	if p := long.packet(false); p.desiredMinTx != 2_000_000 {
		t.Errorf("2 s configured, down: desired min TX %d µs, want 2000000", p.desiredMinTx)
	}
}

// TestJitter: each packet is due at the agreed interval less 0 to 20 %
// (10 to 20 % with a Detect Mult of 1) after the last, and may leave with
// other sessions' packets from 75 % of it on (openTx): 75 to 100 % of the
// interval (at most 90 % with a Detect Mult of 1), as RFC 5880 section
// 6.8.7 asks.
func TestJitter(t *testing.T) {
	for _, tc := range []struct {
		mult        uint8
		least, most time.Duration // of the time to the next packet
	}{
		{3, 240 * time.Millisecond, 300 * time.Millisecond},
		{1, 240 * time.Millisecond, 270 * time.Millisecond},
	} {
		t.Run(fmt.Sprintf("multiplier %d", tc.mult), func(t *testing.T) {
			s := New(Config{Local: addrA, Peer: addrB, MinRx: 300 * time.Millisecond, MinTx: 300 * time.Millisecond, Multiplier: tc.mult}, logr.Discard(), nil)
			s.state.Store(uint32(Up))
			for range 2000 {
				if j := s.jitter(); j < tc.least || j > tc.most {
					t.Fatalf("next packet due in %s, want %s to %s", j, tc.least, tc.most)
				}
			}
			now := time.Unix(1000, 0)
			s.lastTx = now
			if s.openTx(now.Add(224 * time.Millisecond)) {
				t.Error("may be sent 224ms after the last, under 75% of 300ms")
			}
			if !s.openTx(now.Add(225 * time.Millisecond)) {
				t.Error("may not be sent 225ms after the last, 75% of 300ms")
			}
		})
	}
}

// testListener is a listener whose packets go to rx, for due's tests.
func testListener(t *testing.T) (*listener, *net.UDPConn) {
	t.Helper()
	rx, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(addrB, 0)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rx.Close() })
	l, err := listen(netip.AddrPortFrom(addrA, 0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.close)
	return l, rx
}

// TestDue: a packet due now is sent; one not due is sent only with
// another's (sendOpen) and only once 75 % of the interval has passed since
// the last; what is due next is returned; a detection time ended takes an
// Up session down. Times are given, not waited for.
func TestDue(t *testing.T) {
	l, rx := testListener(t)
	s := New(Config{Local: addrA, Peer: addrB, MinRx: 300 * time.Millisecond, MinTx: 300 * time.Millisecond, Multiplier: 3}, logr.Discard(), nil)
	s.listener, s.remote = l, netip.AddrPortFrom(addrB, uint16(rx.LocalAddr().(*net.UDPAddr).Port)) //nolint:gosec // a port
	s.state.Store(uint32(Up))
	now := time.Unix(1000, 0)
	sent := func() bool {
		t.Helper()
		l.flush()
		if err := rx.SetReadDeadline(time.Now().Add(200 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		_, _, err := rx.ReadFrom(make([]byte, 64))
		return err == nil
	}

	s.lastTx, s.nextTx = now.Add(-200*time.Millisecond), now.Add(20*time.Millisecond)
	if next := s.due(now, false); !next.Equal(s.nextTx) || sent() {
		t.Errorf("due in 20 ms: next %s, want %s, and nothing sent", next.Sub(now), 20*time.Millisecond)
	}
	if s.due(now, true); sent() {
		t.Error("sent with another's 200ms after the last, under 75% of the interval")
	}
	s.lastTx = now.Add(-230 * time.Millisecond)
	next := s.due(now, true)
	if !sent() {
		t.Error("not sent with another's 230ms after the last")
	}
	if d := next.Sub(now); d < 240*time.Millisecond || d > 300*time.Millisecond || !s.lastTx.Equal(now) {
		t.Errorf("after a packet the next is due in %s, want 240ms to 300ms, and the last now", d)
	}
	s.nextTx = now
	if s.due(now, false); !sent() {
		t.Error("due now: nothing sent")
	}

	s.nextTx = now.Add(time.Hour)
	s.detectAt = now.Add(time.Millisecond)
	if next := s.due(now, false); !next.Equal(s.detectAt) || s.State() != Up {
		t.Errorf("detection time not ended: next %s, state %s; want the detection time, Up", next.Sub(now), s.State())
	}
	s.due(now.Add(time.Millisecond), false)
	if s.State() != Down || s.diag != diagTimeExpired || !s.detectAt.IsZero() {
		t.Errorf("detection time ended: state %s, diagnostic %d; want Down, %d, and no detection time counted", s.State(), s.diag, diagTimeExpired)
	}
}
