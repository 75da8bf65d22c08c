package l2

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ndp"

	"github.com/metal-ccm/metal-ccm/test/framework"
)

// The test segment: a veth pair between a node namespace and a client
// namespace, both made by the test.
const (
	nodeIf   = "node0"
	clientIf = "client0"
)

var (
	nodePrefix4   = netip.MustParsePrefix("198.18.121.1/24")
	nodePrefix6   = netip.MustParsePrefix("2001:db8:121::1/64")
	clientPrefix4 = netip.MustParsePrefix("198.18.121.2/24")
	clientPrefix6 = netip.MustParsePrefix("2001:db8:121::2/64")
)

// segment is one node and one client namespace joined by a veth pair.
type segment struct {
	node, client string
	nodeMAC      net.HardwareAddr
}

var segments atomic.Int32

// newSegment makes the namespaces; they are deleted by name when the test
// ends, failed or not. It skips without root or without ip.
func newSegment(t *testing.T) *segment {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to make network namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs ip (iproute2)")
	}
	n := segments.Add(1)
	s := &segment{
		node:   fmt.Sprintf("l2node-%d-%d", os.Getpid(), n),
		client: fmt.Sprintf("l2client-%d-%d", os.Getpid(), n),
	}
	for _, ns := range []string{s.node, s.client} {
		ipCmd(t, "netns", "add", ns)
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() }) //nolint:gosec // ip with the test's own namespace
		// No Duplicate Address Detection: the addresses (link-local ones
		// too) are usable at once, and the test waits for nothing.
		for _, conf := range []string{"default", "all"} {
			ipCmd(t, "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf."+conf+".accept_dad=0")
		}
		ipCmd(t, "-n", ns, "link", "set", "lo", "up")
	}
	ipCmd(t, "link", "add", nodeIf, "netns", s.node, "type", "veth", "peer", "name", clientIf, "netns", s.client)
	for _, a := range []struct {
		ns, dev string
		p       netip.Prefix
	}{{s.node, nodeIf, nodePrefix4}, {s.node, nodeIf, nodePrefix6}, {s.client, clientIf, clientPrefix4}, {s.client, clientIf, clientPrefix6}} {
		ipCmd(t, "-n", a.ns, "addr", "add", a.p.String(), "dev", a.dev)
	}
	ipCmd(t, "-n", s.node, "link", "set", nodeIf, "up")
	ipCmd(t, "-n", s.client, "link", "set", clientIf, "up")
	// The link-local addresses come when the link is up on both ends; NDP
	// messages are sent from them.
	for _, x := range []struct{ ns, dev string }{{s.node, nodeIf}, {s.client, clientIf}} {
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(ipCmd(t, "-n", x.ns, "-6", "addr", "show", "dev", x.dev, "scope", "link"), "fe80::") {
			if time.Now().After(deadline) {
				t.Fatalf("no link-local address on %s in %s within 5 s", x.dev, x.ns)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	err := framework.RunInNetNS(s.node, func() error {
		ifi, err := net.InterfaceByName(nodeIf)
		if err == nil {
			s.nodeMAC = ifi.HardwareAddr
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func ipCmd(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("ip", args...).CombinedOutput() //nolint:gosec // ip with the test's arguments
	if err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// start runs a Responder for the node namespace until the test ends. Run
// is called in the namespace: the probes of its conflicts open their
// sockets there.
func (s *segment) start(t *testing.T, opts Options) *Responder {
	t.Helper()
	return s.run(t, New(opts))
}

// run runs r in the node namespace until the test ends.
func (s *segment) run(t *testing.T, r *Responder) *Responder {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		var runErr error
		if err := framework.RunInNetNS(s.node, func() error { runErr = r.Run(ctx); return nil }); err != nil {
			runErr = err
		}
		done <- runErr
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return r
}

// set calls SetAddresses from the node namespace, where it opens its
// sockets.
func (s *segment) set(t *testing.T, r *Responder, addrs ...netip.Addr) error {
	t.Helper()
	return framework.RunInNetNS(s.node, func() error { return r.SetAddresses(t.Context(), addrs) })
}

// inClient runs fn in the client namespace (its sockets stay there).
func (s *segment) inClient(t *testing.T, fn func(ifi *net.Interface) error) {
	t.Helper()
	err := framework.RunInNetNS(s.client, func() error {
		ifi, err := net.InterfaceByName(clientIf)
		if err != nil {
			return err
		}
		return fn(ifi)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (s *segment) arpClient(t *testing.T) *arp.Client {
	t.Helper()
	var c *arp.Client
	s.inClient(t, func(ifi *net.Interface) (err error) {
		c, err = arp.Dial(ifi)
		return err
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func (s *segment) ndpClient(t *testing.T) *ndp.Conn {
	t.Helper()
	var c *ndp.Conn
	s.inClient(t, func(ifi *net.Interface) (err error) {
		c, _, err = ndp.Listen(ifi, ndp.LinkLocal)
		return err
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// resolve asks once for addr from the client, as a host does (ARP request,
// or Neighbor Solicitation to the solicited-node group), and returns the
// MAC of the answer; an error when none comes within wait.
func (s *segment) resolve(t *testing.T, addr netip.Addr, wait time.Duration) (net.HardwareAddr, error) {
	t.Helper()
	if addr.Is4() {
		c := s.arpClient(t)
		_ = c.SetDeadline(time.Now().Add(wait))
		return c.Resolve(addr)
	}
	c := s.ndpClient(t)
	_ = c.SetDeadline(time.Now().Add(wait))
	var mac net.HardwareAddr
	s.inClient(t, func(ifi *net.Interface) error { mac = ifi.HardwareAddr; return nil })
	group, err := ndp.SolicitedNodeMulticast(addr)
	if err != nil {
		t.Fatal(err)
	}
	ns := &ndp.NeighborSolicitation{TargetAddress: addr, Options: []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Source, Addr: mac}}}
	if err := c.WriteTo(ns, nil, group); err != nil {
		t.Fatalf("send Neighbor Solicitation: %v", err)
	}
	for {
		m, _, _, err := c.ReadFrom()
		if err != nil {
			return nil, err
		}
		na, ok := m.(*ndp.NeighborAdvertisement)
		if !ok || na.TargetAddress != addr {
			continue
		}
		if !na.Solicited || !na.Override {
			t.Errorf("advertisement for %s: Solicited %v, Override %v; want both", addr, na.Solicited, na.Override)
		}
		return targetLinkLayer(na), nil
	}
}

// eventuallyResolves asks until the node's MAC comes back for addr, for at
// most 5 s.
func (s *segment) eventuallyResolves(t *testing.T, addr netip.Addr) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		mac, err := s.resolve(t, addr, time.Second)
		if err == nil && bytes.Equal(mac, s.nodeMAC) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not resolve to the node's %s within 5 s: got %s, %v", addr, s.nodeMAC, mac, err)
		}
	}
}

// notAnswered checks that no answer for addr comes within 2 s.
func (s *segment) notAnswered(t *testing.T, addr netip.Addr) {
	t.Helper()
	mac, err := s.resolve(t, addr, 2*time.Second)
	if err == nil {
		t.Fatalf("%s still answered, with %s", addr, mac)
	}
	if ne, ok := errors.AsType[net.Error](err); !ok || !ne.Timeout() {
		t.Fatalf("asking for %s: %v, want a time-out", addr, err)
	}
}
