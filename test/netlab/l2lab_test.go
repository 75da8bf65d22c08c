package netlab

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/metal-ccm/metal-ccm/test/framework"
)

var families = []Family{IPv4, IPv6}

// netnsList is the names of the namespaces of the machine.
func netnsList(t *testing.T) []string {
	t.Helper()
	out, err := output("ip", "netns", "list")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			names = append(names, f[0])
		}
	}
	return names
}

func TestL2LabBuildsAndCloses(t *testing.T) {
	if err := AvailableL2(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	l, err := StartL2(L2Options{Nodes: 2})
	if err != nil {
		t.Fatal(err)
	}
	names := append([]string{l.Switch, l.Client}, l.Nodes...)
	if len(names) != 4 {
		t.Fatalf("namespaces %v, want switch, client and 2 nodes", names)
	}
	have := netnsList(t)
	for _, ns := range names {
		if !strings.HasPrefix(ns, "mccm-"+l.ID+"-") || !slices.Contains(have, ns) {
			t.Errorf("namespace %s: missing or without the lab's prefix (have %v)", ns, have)
		}
	}
	for i := range l.Nodes {
		mac, err := l.NodeMAC(i)
		if err != nil || len(mac) != 6 {
			t.Errorf("NodeMAC(%d) = %v, %v", i, mac, err)
		}
		out, err := l.NodeRun(context.Background(), i, "ip", "-br", "addr", "show", "dev", NodeLink)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			if want := netip.PrefixFrom(L2NodeAddr(f, i), L2Subnet(f).Bits()).String(); !strings.Contains(out, want) {
				t.Errorf("node %d addresses %q lack %s", i, out, want)
			}
		}
	}
	if out, err := output("ip", "-n", l.Switch, "-br", "addr", "show", "dev", bridgeName); err != nil || len(strings.Fields(out)) > 2 {
		t.Errorf("switch bridge has addresses: %q, %v", out, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	have = netnsList(t)
	for _, ns := range names {
		if slices.Contains(have, ns) {
			t.Errorf("namespace %s left after Close", ns)
		}
	}
}

func TestL2Addresses(t *testing.T) {
	for _, f := range families {
		sub := L2Subnet(f)
		if err := checkAddr(sub.Addr()); err != nil {
			t.Error(err)
		}
		seen := map[netip.Addr]string{L2ClientAddr(f): "client"}
		for i := range l2MaxNodes {
			seen[L2NodeAddr(f, i)] = "node"
		}
		for i := range l2MaxVIPs {
			v := L2VIP(f, i)
			if seen[v] != "" || !sub.Contains(v) {
				t.Errorf("VIP %d %s: held by %q or outside %s", i, v, seen[v], sub)
			}
			seen[v] = "vip"
		}
		for a := range seen {
			if !sub.Contains(a) || a == sub.Addr() {
				t.Errorf("%s outside %s or the subnet's own address", a, sub)
			}
		}
	}
	if got := L2NodeAddr(IPv6, 0).String(); got != "2001:db8:125::11" {
		t.Errorf("node 0 IPv6 = %s", got)
	}
	if got := L2VIP(IPv4, 1).String(); got != "198.18.125.201" {
		t.Errorf("VIP 1 IPv4 = %s", got)
	}
}

func TestParseNeighbor(t *testing.T) {
	mac, state, ok, err := parseNeighbor(`[{"dst":"198.18.125.11","dev":"eth0","lladdr":"02:00:00:00:00:11","state":["REACHABLE"]}]`)
	if err != nil || !ok || mac.String() != "02:00:00:00:00:11" || state != "REACHABLE" {
		t.Errorf("reachable = %v %q %v %v", mac, state, ok, err)
	}
	mac, state, ok, err = parseNeighbor(`[{"dst":"198.18.125.99","dev":"eth0","state":["FAILED"]}]`)
	if err != nil || !ok || mac != nil || state != "FAILED" {
		t.Errorf("failed = %v %q %v %v", mac, state, ok, err)
	}
	for _, empty := range []string{"", "[]\n"} {
		if _, _, ok, err := parseNeighbor(empty); ok || err != nil {
			t.Errorf("%q = %v, %v", empty, ok, err)
		}
	}
}

func TestL2LabPingAndNodeLink(t *testing.T) {
	l := NewL2(t, L2Options{})
	if len(l.Nodes) != 3 {
		t.Fatalf("%d nodes, want the default 3", len(l.Nodes))
	}
	pingWithin := func(d time.Duration, a netip.Addr) error {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		return l.ClientPing(ctx, a)
	}
	for _, f := range families {
		for i := range l.Nodes {
			if err := pingWithin(5*time.Second, L2NodeAddr(f, i)); err != nil {
				t.Errorf("node %d: %v", i, err)
			}
			mac, state, ok, err := l.ClientNeighbor(L2NodeAddr(f, i))
			want, _ := l.NodeMAC(i)
			if err != nil || !ok || mac.String() != want.String() {
				t.Errorf("client's neighbour %s = %v %q %v %v, want %v", L2NodeAddr(f, i), mac, state, ok, err, want)
			}
		}
		if err := pingWithin(time.Second, L2VIP(f, 0)); err == nil {
			t.Errorf("VIP %s answered, but no one holds it", L2VIP(f, 0))
		}
	}
	if err := l.SetNodeLink(1, false); err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if err := pingWithin(time.Second, L2NodeAddr(f, 1)); err == nil {
			t.Errorf("node 1 %s answered with its link down", L2NodeAddr(f, 1))
		}
		if err := pingWithin(5*time.Second, L2NodeAddr(f, 2)); err != nil {
			t.Errorf("node 2 with node 1's link down: %v", err)
		}
	}
	if err := l.SetNodeLink(1, true); err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if err := pingWithin(10*time.Second, L2NodeAddr(f, 1)); err != nil {
			t.Errorf("node 1 with its link up again: %v", err)
		}
	}
	if err := l.FlushClientNeighbors(); err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if mac, state, ok, err := l.ClientNeighbor(L2NodeAddr(f, 0)); err != nil || (ok && mac != nil && !strings.Contains(state, "FAILED")) {
			t.Errorf("after flush, neighbour %s = %v %q %v %v", L2NodeAddr(f, 0), mac, state, ok, err)
		}
	}
	if out, err := l.ClientRun(context.Background(), "ip", "-br", "addr", "show", "dev", NodeLink); err != nil || !strings.Contains(out, L2ClientAddr(IPv4).String()) {
		t.Errorf("ClientRun: %q, %v", out, err)
	}
}

// l2Listen listens on TCP and UDP port in node i for both families; TCP
// connections are accepted and closed, UDP datagrams are sent to the
// returned channel. Everything closes with the test.
func l2Listen(t *testing.T, l *L2Lab, i int, port uint16) <-chan string {
	t.Helper()
	got := make(chan string, 16)
	for _, f := range families {
		ap := netip.AddrPortFrom(L2NodeAddr(f, i), port).String()
		ln, err := framework.ListenInNetNS(l.NodeNamespace(i), "tcp", ap)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				_ = c.Close()
			}
		}()
		var pc net.PacketConn
		if err := framework.RunInNetNS(l.NodeNamespace(i), func() error {
			var err error
			pc, err = net.ListenPacket("udp", ap)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = pc.Close() })
		go func() {
			buf := make([]byte, 100)
			for {
				n, _, err := pc.ReadFrom(buf)
				if err != nil {
					return
				}
				got <- string(buf[:n])
			}
		}()
	}
	return got
}

// l2TCP connects from namespace ns to addr:port within a second.
func l2TCP(ns string, addr netip.Addr, port uint16) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c, err := framework.DialInNetNS(ctx, ns, "tcp", netip.AddrPortFrom(addr, port).String())
	if err == nil {
		_ = c.Close()
	}
	return err
}

// l2UDP sends msg from namespace ns to addr:port and reports whether got
// receives it within 500 ms.
func l2UDP(t *testing.T, ns string, addr netip.Addr, port uint16, msg string, got <-chan string) bool {
	t.Helper()
	c, err := framework.DialInNetNS(context.Background(), ns, "udp", netip.AddrPortFrom(addr, port).String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(500 * time.Millisecond)
	for {
		select {
		case m := <-got:
			if m == msg {
				return true
			}
		case <-timeout:
			return false
		}
	}
}

func TestL2LabBlockBetweenNodes(t *testing.T) {
	l := NewL2(t, L2Options{})
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skipf("skipping: no nft (hack/install-deps.sh installs it): %v", err)
	}
	const port, other = 7946, 7947
	got0 := l2Listen(t, l, 0, port)
	l2Listen(t, l, 0, other)
	l2Listen(t, l, 2, port)
	undo, err := l.BlockBetweenNodes(0, port)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		n0 := L2NodeAddr(f, 0)
		if err := l2TCP(l.NodeNamespace(1), n0, port); err == nil {
			t.Errorf("%v: node 1 reached node 0 on TCP port %d through the block", f, port)
		}
		if err := l2TCP(l.NodeNamespace(0), L2NodeAddr(f, 2), port); err == nil {
			t.Errorf("%v: node 0 reached node 2 on TCP port %d through the block", f, port)
		}
		if err := l2TCP(l.ClientNamespace(), n0, port); err != nil {
			t.Errorf("%v: client to node 0 port %d: %v", f, port, err)
		}
		if err := l2TCP(l.NodeNamespace(1), n0, other); err != nil {
			t.Errorf("%v: node 1 to node 0 port %d (not blocked): %v", f, other, err)
		}
		if l2UDP(t, l.NodeNamespace(1), n0, port, fmt.Sprintf("node1-v%d", f), got0) {
			t.Errorf("%v: node 1's UDP datagram reached node 0 port %d through the block", f, port)
		}
		if !l2UDP(t, l.ClientNamespace(), n0, port, fmt.Sprintf("client-v%d", f), got0) {
			t.Errorf("%v: the client's UDP datagram to node 0 port %d was lost", f, port)
		}
	}
	if err := undo(); err != nil {
		t.Fatal(err)
	}
	if err := undo(); err != nil {
		t.Errorf("second undo: %v", err)
	}
	if tables, err := l.l2BlockTables(0); err != nil || strings.Contains(tables, "mccm_block") {
		t.Errorf("tables after undo: %q, %v", tables, err)
	}
	for _, f := range families {
		if err := l2TCP(l.NodeNamespace(1), L2NodeAddr(f, 0), port); err != nil {
			t.Errorf("%v: node 1 to node 0 after undo: %v", f, err)
		}
		if !l2UDP(t, l.NodeNamespace(1), L2NodeAddr(f, 0), port, fmt.Sprintf("after-v%d", f), got0) {
			t.Errorf("%v: node 1's UDP datagram lost after undo", f)
		}
	}
}

func TestOverlapOfMACs(t *testing.T) {
	t0 := time.Unix(1000, 0)
	a, b, c := net.HardwareAddr{2, 0, 0, 0, 0, 0xa}, net.HardwareAddr{2, 0, 0, 0, 0, 0xb}, net.HardwareAddr{2, 0, 0, 0, 0, 0xc}
	at := func(mac net.HardwareAddr, s float64) Reply {
		return Reply{MAC: mac, Time: t0.Add(time.Duration(s * float64(time.Second)))}
	}
	const w = time.Second
	for _, tc := range []struct {
		name    string
		replies []Reply
		want    time.Duration
	}{
		{"none", nil, 0},
		{"one MAC, many replies", []Reply{at(a, 0), at(a, 0.5), at(a, 3)}, 0},
		{"handover, touching", []Reply{at(a, 0), at(b, 1), at(b, 2)}, 0},
		{"handover with 300ms overlap", []Reply{at(a, 0), at(b, 0.7)}, 300 * time.Millisecond},
		{"any order", []Reply{at(b, 0.7), at(a, 0)}, 300 * time.Millisecond},
		// a answers 0..2.5 (merged), b 1..2: overlap 1s.
		{"same MAC merged", []Reply{at(a, 0), at(a, 0.8), at(a, 1.5), at(b, 1)}, time.Second},
		// a 0..1, b 0.5..1.5, c 0.9..1.9: two or more from 0.5 to 1.5.
		{"three MACs chain", []Reply{at(a, 0), at(b, 0.5), at(c, 0.9)}, time.Second},
		// Two separate overlaps, the longest counts.
		{"longest of two", []Reply{at(a, 0), at(b, 0.9), at(a, 5), at(b, 5.5)}, 500 * time.Millisecond},
		{"same instant", []Reply{at(a, 2), at(b, 2)}, time.Second},
	} {
		if got := OverlapOfMACs(tc.replies, w); got != tc.want {
			t.Errorf("%s: overlap %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestParseAnswer(t *testing.T) {
	node := net.HardwareAddr{2, 0, 0, 0, 0, 0x11}
	client := net.HardwareAddr{2, 0, 0, 0, 0, 0x02}
	vip4, vip6 := L2VIP(IPv4, 0), L2VIP(IPv6, 0)
	eth := func(dst, src net.HardwareAddr, typ uint16, body []byte) []byte {
		f := binary.BigEndian.AppendUint16(append(slices.Clone(dst), src...), typ)
		return append(f, body...)
	}
	arp := func(op byte, sha net.HardwareAddr, spa netip.Addr, tha net.HardwareAddr, tpa netip.Addr) []byte {
		p := []byte{0, 1, 8, 0, 6, 4, 0, op}
		p = append(append(p, sha...), spa.AsSlice()...)
		return append(append(p, tha...), tpa.AsSlice()...)
	}
	na := func(flags byte, target netip.Addr, tlla net.HardwareAddr) []byte {
		ip := make([]byte, 40)
		ip[0], ip[6], ip[7] = 0x60, 58, 255
		icmp := append([]byte{136, 0, 0, 0, flags, 0, 0, 0}, target.AsSlice()...)
		if tlla != nil {
			icmp = append(append(icmp, 2, 1), tlla...)
		}
		return append(ip, icmp...)
	}
	bcast := net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	other := net.HardwareAddr{2, 0, 0, 0, 0, 0x99}
	for _, tc := range []struct {
		name  string
		frame []byte
		vip   netip.Addr
		ok    bool
		want  Reply
	}{
		{"ARP reply", eth(client, node, 0x0806, arp(2, node, vip4, client, L2ClientAddr(IPv4))), vip4, true, Reply{MAC: node, EtherSource: node}},
		{"ARP reply, other sender MAC", eth(client, other, 0x0806, arp(2, node, vip4, client, L2ClientAddr(IPv4))), vip4, true, Reply{MAC: node, EtherSource: other}},
		{"gratuitous request", eth(bcast, node, 0x0806, arp(1, node, vip4, bcast, vip4)), vip4, true, Reply{MAC: node, EtherSource: node, Unsolicited: true}},
		{"gratuitous reply", eth(bcast, node, 0x0806, arp(2, node, vip4, bcast, vip4)), vip4, true, Reply{MAC: node, EtherSource: node, Unsolicited: true}},
		{"ARP request", eth(bcast, client, 0x0806, arp(1, client, L2ClientAddr(IPv4), nil6(), vip4)), vip4, false, Reply{}},
		{"ARP reply for another address", eth(client, node, 0x0806, arp(2, node, L2VIP(IPv4, 1), client, L2ClientAddr(IPv4))), vip4, false, Reply{}},
		{"solicited NA", eth(client, node, 0x86dd, na(0x60, vip6, node)), vip6, true, Reply{MAC: node, EtherSource: node}},
		{"unsolicited NA", eth(bcast, node, 0x86dd, na(0x20, vip6, other)), vip6, true, Reply{MAC: other, EtherSource: node, Unsolicited: true}},
		{"NA without option", eth(client, node, 0x86dd, na(0x40, vip6, nil)), vip6, true, Reply{MAC: node, EtherSource: node}},
		{"NA for another address", eth(client, node, 0x86dd, na(0x60, L2VIP(IPv6, 1), node)), vip6, false, Reply{}},
		{"ARP for an IPv6 watch", eth(client, node, 0x0806, arp(2, node, vip4, client, L2ClientAddr(IPv4))), vip6, false, Reply{}},
		{"short", []byte{1, 2, 3}, vip4, false, Reply{}},
	} {
		got, ok := parseAnswer(tc.frame, tc.vip)
		if ok != tc.ok || got.MAC.String() != tc.want.MAC.String() || got.EtherSource.String() != tc.want.EtherSource.String() || got.Unsolicited != tc.want.Unsolicited {
			t.Errorf("%s: %+v %v, want %+v %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// nil6 is an all-zero MAC (an ARP request's target hardware address).
func nil6() net.HardwareAddr { return make(net.HardwareAddr, 6) }

func TestL2LabWatchARPReplies(t *testing.T) {
	l := NewL2(t, L2Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, f := range families {
		addr := L2NodeAddr(f, 1)
		want, err := l.NodeMAC(1)
		if err != nil {
			t.Fatal(err)
		}
		w, err := l.WatchARPReplies(ctx, addr)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.FlushClientNeighbors(); err != nil {
			t.Fatal(err)
		}
		if err := l.ClientPing(ctx, addr); err != nil {
			t.Fatal(err)
		}
		var replies []Reply
		for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if replies = w.Replies(); len(replies) > 0 {
				break
			}
		}
		if err := w.Close(); err != nil {
			t.Error(err)
		}
		if len(replies) == 0 {
			t.Errorf("%s: no answer recorded", addr)
			continue
		}
		for _, r := range replies {
			if r.MAC.String() != want.String() || r.EtherSource.String() != want.String() || r.Unsolicited || r.Time.IsZero() {
				t.Errorf("%s: answer %+v, want a solicited one from node 1's MAC %s", addr, r, want)
			}
		}
		if got := OverlapOfMACs(replies, time.Second); got != 0 {
			t.Errorf("%s: overlap %v with one node answering", addr, got)
		}
		// Nothing more after Close.
		n := len(w.Replies())
		if err := l.FlushClientNeighbors(); err != nil {
			t.Fatal(err)
		}
		if err := l.ClientPing(ctx, addr); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
		if len(w.Replies()) != n {
			t.Errorf("%s: answers recorded after Close", addr)
		}
	}
}
