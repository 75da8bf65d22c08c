package netlab

import (
	"context"
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
	if got := L2NodeAddr(IPv6, 0).String(); got != "2001:db8:124::11" {
		t.Errorf("node 0 IPv6 = %s", got)
	}
	if got := L2VIP(IPv4, 1).String(); got != "198.18.124.201" {
		t.Errorf("VIP 1 IPv4 = %s", got)
	}
}

func TestParseNeighbor(t *testing.T) {
	mac, state, ok, err := parseNeighbor(`[{"dst":"198.18.124.11","dev":"eth0","lladdr":"02:00:00:00:00:11","state":["REACHABLE"]}]`)
	if err != nil || !ok || mac.String() != "02:00:00:00:00:11" || state != "REACHABLE" {
		t.Errorf("reachable = %v %q %v %v", mac, state, ok, err)
	}
	mac, state, ok, err = parseNeighbor(`[{"dst":"198.18.124.99","dev":"eth0","state":["FAILED"]}]`)
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
