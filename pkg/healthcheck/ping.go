package healthcheck

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"syscall"
	"time"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
)

// pingBatch is how many echo requests one system call sends, and how many
// replies one reads: a slot of 5,000 nodes' targets pings about 300.
const pingBatch = 64

// ErrPingUnavailable: this process may not open an unprivileged ICMP echo
// socket (its group is outside net.ipv4.ping_group_range), so every check
// is an HTTP check.
var ErrPingUnavailable = errors.New("unprivileged ICMP echo sockets are not allowed (net.ipv4.ping_group_range)")

// batchConn is what a ping socket of either family offers (x/net's ipv4 and
// ipv6 PacketConn, whose Message is the same type).
type batchConn interface {
	WriteBatch(ms []ipv4.Message, flags int) (int, error)
	ReadBatch(ms []ipv4.Message, flags int) (int, error)
	SetReadDeadline(t time.Time) error
}

// pinger sends ICMP echo requests from unprivileged ping sockets
// (SOCK_DGRAM, IPPROTO_ICMP: no capability; the kernel sets the echo's
// identifier and delivers this socket's replies only), many per system
// call, and matches the replies by source and sequence number. A node's
// kernel answers an echo without waking any process, on either side but
// the pinger's one read per batch: that is why a ping costs a fraction of
// an HTTP check (docs/performance.md). One slot's goroutine uses it.
type pinger struct {
	conns [2]*pingConn // IPv4, IPv6; nil until first needed
	seq   uint16
	msgs  []ipv4.Message
	bufs  [][]byte
}

type pingConn struct {
	pc   *icmp.PacketConn
	conn batchConn
	v6   bool
}

// openPing opens a ping socket of addr's family.
func openPing(v6 bool) (*pingConn, error) {
	network, laddr := "udp4", "0.0.0.0"
	if v6 {
		network, laddr = "udp6", "::"
	}
	pc, err := icmp.ListenPacket(network, laddr)
	if err != nil {
		if errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) {
			return nil, ErrPingUnavailable
		}
		return nil, err
	}
	c := &pingConn{pc: pc, v6: v6}
	if v6 {
		c.conn = pc.IPv6PacketConn()
	} else {
		c.conn = pc.IPv4PacketConn()
	}
	return c, nil
}

// PingAvailable says whether this process can open a ping socket of each
// family it needs (nil: it can); the checks work without, as HTTP checks.
func PingAvailable() error {
	c, err := openPing(false)
	if err != nil {
		return err
	}
	return c.pc.Close()
}

func (p *pinger) close() {
	for i, c := range p.conns {
		if c != nil {
			_ = c.pc.Close()
			p.conns[i] = nil
		}
	}
}

// conn is the open socket of a family, opened on first use.
func (p *pinger) conn(v6 bool) (*pingConn, error) {
	i := 0
	if v6 {
		i = 1
	}
	if p.conns[i] == nil {
		c, err := openPing(v6)
		if err != nil {
			return nil, err
		}
		p.conns[i] = c
	}
	return p.conns[i], nil
}

// ping sends one echo request to each of addrs and reports, by index,
// which replied before deadline. An error says that no socket of a family
// could be opened: its addresses report false and the caller checks them
// otherwise.
func (p *pinger) ping(addrs []netip.Addr, deadline time.Time) ([]bool, error) {
	p.seq++
	r := round{seq: p.seq, replied: make([]bool, len(addrs)), waiting: map[netip.Addr][]int{}}
	// Where each address waits: a node has one entry however many of its
	// targets are pinged (kube-proxy's and Local Services').
	var byFamily [2][]netip.Addr
	for i, a := range addrs {
		a = a.Unmap()
		if _, ok := r.waiting[a]; !ok {
			f := 0
			if a.Is6() {
				f = 1
			}
			byFamily[f] = append(byFamily[f], a)
		}
		r.waiting[a] = append(r.waiting[a], i)
	}
	var openErr error
	var sent [2]*pingConn
	for f, as := range byFamily {
		if len(as) == 0 {
			continue
		}
		c, err := p.conn(f == 1)
		if err == nil {
			// Before the first read: a deadline passed makes every read
			// fail, the non-blocking ones of send too.
			err = c.conn.SetReadDeadline(deadline)
		}
		if err != nil {
			openErr = err
			continue
		}
		r.left[f] = len(as)
		p.send(c, as, &r)
		sent[f] = c
	}
	for _, c := range sent {
		if c != nil {
			p.receive(c, &r, 0)
		}
	}
	// One family's wait may have used the other's time: what came by the
	// deadline is read without one.
	for _, c := range sent {
		if c != nil && c.conn.SetReadDeadline(time.Time{}) == nil {
			p.receive(c, &r, syscall.MSG_DONTWAIT)
		}
	}
	return r.replied, openErr
}

// round is one ping's state: its sequence number, the indexes waiting for
// each address, what replied and how many addresses of each family have
// not.
type round struct {
	seq     uint16
	waiting map[netip.Addr][]int
	replied []bool
	left    [2]int
}

// send writes the echo requests, pingBatch a call, and reads the replies
// already there after each batch: on a fast segment they come at once, and
// hundreds would overflow the socket's receive buffer. A request the
// kernel refuses (no route) is left out: it gets no reply.
func (p *pinger) send(c *pingConn, addrs []netip.Addr, r *round) {
	typ := byte(ipv4.ICMPTypeEcho)
	if c.v6 {
		typ = 128 // ICMPv6 Echo Request
	}
	for len(addrs) > 0 {
		n := min(len(addrs), pingBatch)
		p.grow(n)
		ms := p.msgs[:n]
		for i, a := range addrs[:n] {
			b := p.bufs[i][:8]
			// type, code, checksum (the kernel's), identifier (the
			// kernel's: the socket's), sequence number.
			clear(b)
			b[0] = typ
			binary.BigEndian.PutUint16(b[6:], r.seq)
			ms[i] = ipv4.Message{Buffers: [][]byte{b}, Addr: &net.UDPAddr{IP: a.AsSlice()}}
		}
		w, err := c.conn.WriteBatch(ms, 0)
		if err != nil {
			w++ // the message at w failed: skipped
		}
		addrs = addrs[max(w, 1):]
		p.receive(c, r, syscall.MSG_DONTWAIT)
	}
}

// receive reads replies of r's round on c until every address of c's
// family has replied, or, with MSG_DONTWAIT in flags, none is queued; else
// until the socket's read deadline.
func (p *pinger) receive(c *pingConn, r *round, flags int) {
	f, want := 0, byte(ipv4.ICMPTypeEchoReply)
	if c.v6 {
		f, want = 1, 129 // ICMPv6 Echo Reply
	}
	p.grow(pingBatch)
	ms := p.msgs[:pingBatch]
	for errs := 0; r.left[f] > 0; {
		for i := range ms {
			ms[i] = ipv4.Message{Buffers: [][]byte{p.bufs[i]}}
		}
		n, err := c.conn.ReadBatch(ms, flags)
		if err != nil {
			var ne net.Error
			if flags&syscall.MSG_DONTWAIT != 0 || errors.As(err, &ne) && ne.Timeout() || errors.Is(err, net.ErrClosed) {
				return
			}
			// An ICMP error queued on the socket (unreachable): read on,
			// a few times.
			if errs++; errs > pingBatch {
				return
			}
			continue
		}
		for _, m := range ms[:n] {
			b := m.Buffers[0][:m.N]
			ua, ok := m.Addr.(*net.UDPAddr)
			if len(b) < 8 || b[0] != want || !ok || binary.BigEndian.Uint16(b[6:]) != r.seq {
				continue // a late reply of an earlier round
			}
			from, ok := netip.AddrFromSlice(ua.IP)
			if !ok {
				continue
			}
			idx, ok := r.waiting[from.Unmap()]
			if !ok || r.replied[idx[0]] {
				continue
			}
			for _, i := range idx {
				r.replied[i] = true
			}
			r.left[f]--
		}
	}
}

// grow makes room for n messages and their buffers (an echo reply is 8
// bytes; a larger buffer lets one with data be read whole).
func (p *pinger) grow(n int) {
	for len(p.msgs) < n {
		p.msgs = append(p.msgs, ipv4.Message{})
		p.bufs = append(p.bufs, make([]byte, 64))
	}
}
