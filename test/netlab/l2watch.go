package netlab

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/metal-ccm/metal-ccm/test/framework"
)

// Reply is one answer for an address that the client's link received: an
// ARP reply (IPv4) or a Neighbor Advertisement (IPv6).
type Reply struct {
	// Time is when the capture read it.
	Time time.Time
	// MAC is the link-layer address the answer gives for the address: the
	// ARP sender hardware address, or the NA's target link-layer address
	// option (the Ethernet source when the option is absent).
	MAC net.HardwareAddr
	// EtherSource is the Ethernet source address of the frame.
	EtherSource net.HardwareAddr
	// Unsolicited: a gratuitous ARP (sender and target protocol address
	// both the address, a request or a reply), or an NA without the
	// Solicited flag.
	Unsolicited bool
}

// ReplyWatch is a packet capture on the client's link that records every
// answer for one address. Its methods are safe for concurrent use.
type ReplyWatch struct {
	vip     netip.Addr
	fd      int
	mu      sync.Mutex
	replies []Reply
	err     error // what stopped the capture early, if anything
	stop    chan struct{}
	stopped chan struct{}
	once    sync.Once
}

// watchPoll is how often the capture checks whether it should stop.
const watchPoll = 100 * time.Millisecond

// Ethernet types the capture reads.
const (
	etherTypeARP  = 0x0806
	etherTypeIPv6 = 0x86dd
)

// WatchARPReplies starts a packet capture on the client's link (an
// AF_PACKET socket made in the client namespace by the test process; no
// tcpdump) that records every ARP reply and gratuitous ARP for an IPv4 vip,
// or every Neighbor Advertisement for an IPv6 vip, with the MAC address it
// gives and the time it arrived. Frames the client sends are not recorded.
// The capture runs until Close, ctx ends, or the lab closes; what it
// recorded stays readable.
func (l *L2Lab) WatchARPReplies(ctx context.Context, vip netip.Addr) (*ReplyWatch, error) {
	vip = vip.Unmap()
	if err := checkAddr(vip); err != nil {
		return nil, fmt.Errorf("netlab L2 watch: %w", err)
	}
	proto := uint16(etherTypeARP)
	if vip.Is6() {
		proto = etherTypeIPv6
	}
	w := &ReplyWatch{vip: vip, fd: -1, stop: make(chan struct{}), stopped: make(chan struct{})}
	err := framework.RunInNetNS(l.Client, func() error {
		ifi, err := net.InterfaceByName(nsLink)
		if err != nil {
			return err
		}
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(proto)))
		if err != nil {
			return fmt.Errorf("packet socket: %w", err)
		}
		w.fd = fd
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(proto), Ifindex: ifi.Index}); err != nil {
			return fmt.Errorf("bind packet socket to %s: %w", nsLink, err)
		}
		tv := unix.NsecToTimeval(watchPoll.Nanoseconds())
		return unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	})
	if err != nil {
		if w.fd >= 0 {
			_ = unix.Close(w.fd)
		}
		return nil, fmt.Errorf("netlab L2 watch %s: %w", vip, err)
	}
	go w.read()
	go func() {
		select {
		case <-ctx.Done():
			_ = w.Close()
		case <-w.stopped:
		}
	}()
	if err := l.AddCloser(func() { _ = w.Close() }); err != nil {
		return nil, err
	}
	return w, nil
}

// htons is v in network byte order, as the packet socket calls take it.
func htons(v uint16) uint16 {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], v)
	return binary.NativeEndian.Uint16(b[:])
}

func (w *ReplyWatch) read() {
	defer close(w.stopped)
	defer func() { _ = unix.Close(w.fd) }()
	buf := make([]byte, 2048)
	for {
		select {
		case <-w.stop:
			return
		default:
		}
		n, from, err := unix.Recvfrom(w.fd, buf, 0)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			w.mu.Lock()
			w.err = err
			w.mu.Unlock()
			return
		}
		if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
			continue
		}
		r, ok := parseAnswer(buf[:n], w.vip)
		if !ok {
			continue
		}
		r.Time = time.Now()
		w.mu.Lock()
		w.replies = append(w.replies, r)
		w.mu.Unlock()
	}
}

// Replies are the answers recorded so far, oldest first.
func (w *ReplyWatch) Replies() []Reply {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.replies)
}

// Close stops the capture and waits for it. It returns what stopped the
// capture early, if anything; calling it again returns the same.
func (w *ReplyWatch) Close() error {
	w.once.Do(func() { close(w.stop) })
	<-w.stopped
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return fmt.Errorf("netlab L2 watch %s: %w", w.vip, w.err)
	}
	return nil
}

// parseAnswer reads an Ethernet frame: an ARP reply or gratuitous ARP for
// an IPv4 vip, or a Neighbor Advertisement for an IPv6 vip.
func parseAnswer(frame []byte, vip netip.Addr) (Reply, bool) {
	if len(frame) < 14 {
		return Reply{}, false
	}
	src := net.HardwareAddr(slices.Clone(frame[6:12]))
	body := frame[14:]
	switch binary.BigEndian.Uint16(frame[12:14]) {
	case etherTypeARP:
		if !vip.Is4() {
			return Reply{}, false
		}
		return parseARP(body, vip, src)
	case etherTypeIPv6:
		if !vip.Is6() {
			return Reply{}, false
		}
		return parseNA(body, vip, src)
	}
	return Reply{}, false
}

// parseARP reads an Ethernet/IPv4 ARP packet: a reply whose sender is vip,
// or a gratuitous request (sender and target vip).
func parseARP(p []byte, vip netip.Addr, src net.HardwareAddr) (Reply, bool) {
	const (
		arpRequest = 1
		arpReply   = 2
	)
	if len(p) < 28 || binary.BigEndian.Uint16(p[0:2]) != 1 || binary.BigEndian.Uint16(p[2:4]) != 0x0800 || p[4] != 6 || p[5] != 4 {
		return Reply{}, false
	}
	op := binary.BigEndian.Uint16(p[6:8])
	sender, target := netip.AddrFrom4([4]byte(p[14:18])), netip.AddrFrom4([4]byte(p[24:28]))
	gratuitous := sender == vip && target == vip
	if sender != vip || (op != arpReply && (op != arpRequest || !gratuitous)) {
		return Reply{}, false
	}
	return Reply{MAC: slices.Clone(p[8:14]), EtherSource: src, Unsolicited: gratuitous}, true
}

// parseNA reads an IPv6 packet: a Neighbor Advertisement whose target is
// vip (no extension headers, as Linux sends them).
func parseNA(p []byte, vip netip.Addr, src net.HardwareAddr) (Reply, bool) {
	const (
		ipv6Header            = 40
		protoICMPv6           = 58
		typeNA                = 136
		flagSolicited         = 0x40
		optTargetLinkLayer    = 2
		naHeader              = 24 // type, code, checksum, flags, target
		targetLinkLayerLength = 1  // in units of 8 bytes
	)
	if len(p) < ipv6Header+naHeader || p[6] != protoICMPv6 {
		return Reply{}, false
	}
	icmp := p[ipv6Header:]
	if icmp[0] != typeNA || icmp[1] != 0 || netip.AddrFrom16([16]byte(icmp[8:24])) != vip {
		return Reply{}, false
	}
	r := Reply{MAC: src, EtherSource: src, Unsolicited: icmp[4]&flagSolicited == 0}
	for opts := icmp[naHeader:]; len(opts) >= 8 && opts[1] > 0; {
		n := int(opts[1]) * 8
		if n > len(opts) {
			break
		}
		if opts[0] == optTargetLinkLayer && opts[1] == targetLinkLayerLength {
			r.MAC = slices.Clone(opts[2:8])
		}
		opts = opts[n:]
	}
	return r, true
}

// OverlapOfMACs is the longest time during which two or more different
// MACs were answering at once, each reply counting as its MAC answering
// from its Time for window (a half-open span: a reply window after
// another's is no overlap). A test can compare it with the failover
// detection time to check that two nodes never answered together for
// longer. The replies may be in any order.
func OverlapOfMACs(replies []Reply, window time.Duration) time.Duration {
	type span struct{ from, to time.Time }
	// Each MAC's spans, merged so that one MAC counts once.
	byMAC := map[string][]span{}
	for _, r := range replies {
		byMAC[r.MAC.String()] = append(byMAC[r.MAC.String()], span{r.Time, r.Time.Add(window)})
	}
	type event struct {
		at    time.Time
		delta int
	}
	var events []event
	for _, spans := range byMAC {
		slices.SortFunc(spans, func(a, b span) int { return a.from.Compare(b.from) })
		cur := spans[0]
		for _, s := range spans[1:] {
			if !s.from.After(cur.to) {
				if s.to.After(cur.to) {
					cur.to = s.to
				}
				continue
			}
			events = append(events, event{cur.from, 1}, event{cur.to, -1})
			cur = s
		}
		events = append(events, event{cur.from, 1}, event{cur.to, -1})
	}
	// Ends before starts at the same instant: touching spans do not overlap.
	slices.SortFunc(events, func(a, b event) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta
	})
	var longest time.Duration
	var since time.Time
	active := 0
	for _, e := range events {
		before := active
		active += e.delta
		switch {
		case before < 2 && active >= 2:
			since = e.at
		case before >= 2 && active < 2:
			longest = max(longest, e.at.Sub(since))
		}
	}
	return longest
}
