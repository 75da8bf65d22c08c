package bgp

import (
	"context"
	"sync"

	"github.com/go-logr/logr"
	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/server"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/bfd"
)

// startBFD starts peer i's BFD session, when it has one, until ctx ends
// (wg counts it); nil otherwise. When BFD sees the path fail (RFC 5882
// section 4.3: not when the router took its BFD session down on purpose)
// the BGP session is closed and dialed again, as when its hold timer
// expires, instead of after the hold time.
func (s *Speaker) startBFD(ctx context.Context, wg *sync.WaitGroup, logger logr.Logger, i int, srv *server.BgpServer) *bfd.Session {
	p := s.cfg.Peers[i]
	if p.BFD == nil {
		return nil
	}
	cfg := bfd.Config{Peer: p.Address, Local: p.LocalAddress, Hops: p.MultihopTTL,
		MinRx: p.BFD.ReceiveInterval, MinTx: p.BFD.TransmitInterval, Multiplier: p.BFD.Multiplier}
	sess := bfd.New(cfg, logger.WithName("bfd"), func(ev bfd.Event) {
		if ev.From != bfd.Up || ev.To != bfd.Down || ev.RemoteAdminDown {
			return
		}
		logger.Info("BFD session failed: resetting the BGP session", "peer", p.Address, "diagnostic", ev.Diagnostic)
		if err := srv.ResetPeer(context.WithoutCancel(ctx), &api.ResetPeerRequest{Address: p.Address.String(), Communication: "BFD down"}); err != nil {
			logger.V(2).Info("BGP session not reset after BFD down", "peer", p.Address, "err", err)
		}
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		sess.Run(ctx)
	}()
	return sess
}

// bfdState is the State of a peer's BFD session in PeerState: "" without
// one.
func bfdState(sess *bfd.Session) string {
	if sess == nil {
		return ""
	}
	return sess.State().String()
}
