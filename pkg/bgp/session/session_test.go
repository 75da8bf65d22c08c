package session

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/wire"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// waitTimeout bounds every wait on the lab; it is no speed requirement.
const waitTimeout = time.Minute

// labVIP is the prefix the test announces in family f.
func labVIP(f netlab.Family) netip.Prefix {
	if f == netlab.IPv6 {
		return netip.MustParsePrefix("2001:db8:31::1/128")
	}
	return netip.MustParsePrefix("198.18.31.1/32")
}

// update is an UPDATE announcing prefix with next hop nh and path
// identifier id, from an eBGP speaker of AS asn, encoded for sess.
func update(t *testing.T, sess *Session, asn uint32, prefix netip.Prefix, nh netip.Addr, id uint32) []byte {
	t.Helper()
	f := wire.IPv4Unicast
	if prefix.Addr().Is6() {
		f = wire.IPv6Unicast
	}
	attrs := wire.Attributes{Origin: wire.OriginIGP, ASPath: []uint32{asn}}
	p, err := wire.NewPacker(f, &attrs, nh, netip.Addr{}, sess.Negotiated().Options(f))
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Announce(nil, []wire.NLRI{{Prefix: prefix, ID: id}})
	if err != nil {
		t.Fatal(err)
	}
	return wire.AppendEndOfRIB(b, f)
}

// TestSessionWithRouters: against BIRD and FRR, per family, a session
// with a TCP MD5 password, ADD-PATH and graceful restart reaches
// Established; a path sent lands in the router's kernel; the router's
// End-of-RIB arrives; a Cease makes the router drop the route at once.
func TestSessionWithRouters(t *testing.T) {
	for _, kind := range netlab.RouterKinds {
		t.Run(string(kind), func(t *testing.T) {
			lab := netlab.New(t, netlab.Options{Nodes: 1, Router: kind, Password: "lab-s3cret"})
			for _, f := range []netlab.Family{netlab.IPv4, netlab.IPv6} {
				t.Run(fmt.Sprintf("IPv%d", f), func(t *testing.T) {
					ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
					defer cancel()
					fam := wire.IPv4Unicast
					if f == netlab.IPv6 {
						fam = wire.IPv6Unicast
					}
					s, err := Establish(ctx, Config{
						LocalASN: lab.Opts.SpeakerASN, PeerASN: lab.Opts.RouterASN,
						RouterID: netlab.SpeakerAddr(netlab.IPv4, 0), Neighbor: netlab.RouterAddr(f),
						LocalAddress: netlab.SpeakerAddr(f, 0), HoldTime: 9 * time.Second, Password: lab.Opts.Password,
						Families: []wire.Family{fam}, AddPathSend: true, GracefulRestart: true, RestartTime: 120 * time.Second,
					})
					if err != nil {
						t.Fatal(err)
					}
					n := s.Negotiated()
					if !n.Has(fam) || !n.AddPath[fam] || !n.FourOctetAS || !n.GracefulRestart || n.HoldTime != 9*time.Second {
						t.Errorf("negotiated %+v: want %s with ADD-PATH send, 4-octet AS, graceful restart, hold 9s", n, fam)
					}
					var mu sync.Mutex
					eor := map[wire.Family]bool{}
					runCtx, stopRun := context.WithCancel(ctx)
					ran := make(chan error, 1)
					go func() {
						ran <- s.Run(runCtx, Handlers{EndOfRIB: func(g wire.Family) { mu.Lock(); eor[g] = true; mu.Unlock() }})
					}()
					vip, hop := labVIP(f), netlab.NodeAddr(f, 0)
					if err := s.SendRaw(update(t, s, lab.Opts.SpeakerASN, vip, hop, 7)); err != nil {
						t.Fatal(err)
					}
					if err := lab.WaitRoute(ctx, vip, []netip.Addr{hop}); err != nil {
						t.Fatal(err)
					}
					for {
						mu.Lock()
						got := eor[fam]
						mu.Unlock()
						if got {
							break
						}
						select {
						case <-ctx.Done():
							t.Fatalf("no End-of-RIB of %s from the router", fam)
						case <-time.After(50 * time.Millisecond):
						}
					}
					stopRun()
					if err := <-ran; !errors.Is(err, context.Canceled) {
						t.Errorf("Run ended with %v, want context.Canceled", err)
					}
					s.Cease()
					if err := lab.WaitRoute(ctx, vip, nil); err != nil {
						t.Fatal(err)
					}
				})
			}
		})
	}
}
