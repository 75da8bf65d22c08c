package l2

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/ndp"
)

// The addresses the client takes for itself in the conflict tests.
var (
	heldVIP4 = netip.MustParseAddr("198.18.121.150")
	heldVIP6 = netip.MustParseAddr("2001:db8:121::150")
)

// TestResponderConflicts: a host of the segment (the client namespace,
// its kernel answering for an address statically configured) that holds a
// LoadBalancer address makes the responder leave it, whether the host
// holds it before the responder would claim it (its probe is answered), or
// takes it while the responder answers, announcing it or silently (the
// periodic probe finds it); once the host lets it go, a
// re-probe finds no one and the responder answers again.
func TestResponderConflicts(t *testing.T) {
	for _, tc := range []struct {
		name string
		vip  netip.Addr
		bits int
	}{{"IPv4", heldVIP4, 24}, {"IPv6", heldVIP6, 64}} {
		t.Run(tc.name+": held before the claim", func(t *testing.T) {
			s := newSegment(t)
			r := s.startQuick(t)
			drop := s.holdInClient(t, netip.PrefixFrom(tc.vip, tc.bits))
			if err := s.set(t, r, tc.vip); err != nil {
				t.Fatalf("SetAddresses: %v", err)
			}
			if got := r.Addresses(); len(got) != 0 {
				t.Fatalf("answering %v though the client holds %s", got, tc.vip)
			}
			s.waitConflict(t, r, tc.vip, true)
			drop()
			s.waitConflict(t, r, tc.vip, false)
			s.eventuallyResolves(t, tc.vip)
		})
		for _, announce := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s: appears while answered, announcing it %t", tc.name, announce), func(t *testing.T) {
				s := newSegment(t)
				r := s.startQuick(t)
				if err := s.set(t, r, tc.vip); err != nil {
					t.Fatalf("SetAddresses: %v", err)
				}
				s.eventuallyResolves(t, tc.vip)
				drop := s.holdInClient(t, netip.PrefixFrom(tc.vip, tc.bits))
				if announce {
					s.announceFromClient(t, tc.vip)
				} // else: the next audit's probe finds it
				s.waitConflict(t, r, tc.vip, true)
				if got := r.Addresses(); len(got) != 0 {
					t.Fatalf("answering %v though the client holds %s", got, tc.vip)
				}
				drop()
				s.waitConflict(t, r, tc.vip, false)
				s.eventuallyResolves(t, tc.vip)
			})
		}
	}
	t.Run("a peer's MAC is no conflict", func(t *testing.T) {
		s := newSegment(t)
		var client net.HardwareAddr
		s.inClient(t, func(ifi *net.Interface) error { client = ifi.HardwareAddr; return nil })
		r := s.startQuick(t, func(o *Options) { o.Peer = func(mac net.HardwareAddr) bool { return bytes.Equal(mac, client) } })
		drop := s.holdInClient(t, netip.PrefixFrom(heldVIP4, 24))
		defer drop()
		if err := s.set(t, r, heldVIP4); err != nil {
			t.Fatalf("SetAddresses: %v", err)
		}
		s.announceFromClient(t, heldVIP4)
		// The probe and the announcement came from a peer: still answered,
		// past the time a conflict would have been confirmed.
		time.Sleep(time.Second)
		if got := r.Addresses(); len(got) != 1 || got[0].Addr != heldVIP4 {
			t.Fatalf("Addresses() = %v, want %s answered", got, heldVIP4)
		}
		if c := r.Conflicts(); len(c) != 0 {
			t.Errorf("conflicts with a peer: %v", c)
		}
	})
}

// startQuick is start with the conflicts confirmed and probed again
// within a second, so that the test does not wait for the production
// timings.
func (s *segment) startQuick(t *testing.T, opts ...func(*Options)) *Responder {
	t.Helper()
	var o Options
	for _, f := range opts {
		f(&o)
	}
	r := New(o)
	r.confirmAfter, r.reprobeEvery = 200*time.Millisecond, 500*time.Millisecond
	return s.run(t, r)
}

// holdInClient configures p on the client's interface, as a host that uses
// the address statically; the returned func removes it (and the test's end
// does, with the namespace).
func (s *segment) holdInClient(t *testing.T, p netip.Prefix) (drop func()) {
	t.Helper()
	ipCmd(t, "-n", s.client, "addr", "add", p.String(), "dev", clientIf, "nodad")
	return func() { ipCmd(t, "-n", s.client, "addr", "del", p.String(), "dev", clientIf) }
}

// announceFromClient sends what a host that takes addr says to the segment:
// a gratuitous ARP, or an unsolicited Neighbor Advertisement.
func (s *segment) announceFromClient(t *testing.T, addr netip.Addr) {
	t.Helper()
	s.inClient(t, func(ifi *net.Interface) error {
		if addr.Is4() {
			c, err := arp.Dial(ifi)
			if err != nil {
				return err
			}
			defer func() { _ = c.Close() }()
			p, err := arp.NewPacket(arp.OperationRequest, ifi.HardwareAddr, addr, ethernet.Broadcast, addr)
			if err != nil {
				return err
			}
			return c.WriteTo(p, ethernet.Broadcast)
		}
		c, _, err := ndp.Listen(ifi, ndp.LinkLocal)
		if err != nil {
			return err
		}
		defer func() { _ = c.Close() }()
		return c.WriteTo(advertisement(ifi.HardwareAddr, addr, false), nil, allNodes)
	})
}

// waitConflict waits (10 s at most) until addr is among r's conflicts, or
// is not; a conflict names the client's MAC.
func (s *segment) waitConflict(t *testing.T, r *Responder, addr netip.Addr, want bool) {
	t.Helper()
	var client net.HardwareAddr
	s.inClient(t, func(ifi *net.Interface) error { client = ifi.HardwareAddr; return nil })
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := r.Conflicts()
		i := slices.IndexFunc(got, func(c Conflict) bool { return c.Addr == addr })
		if (i >= 0) == want {
			if want && !bytes.Equal(got[i].MAC, client) {
				t.Errorf("conflict %s names %s, want the client's %s", addr, got[i].MAC, client)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("conflicts %v after 10 s: want %s among them %t", got, addr, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
