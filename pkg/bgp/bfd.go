package bgp

import (
	"context"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/bfd"
)

// bfdSessions are a running speaker's BFD sessions, one per peer with BFD
// whose router is known: a peer on an interface gets its session once its
// router is found on the link, with its BGP peer (runBFD; given another
// address for the peer, it moves the session there). Speaker.mu guards it.
type bfdSessions struct {
	ctx    context.Context
	logger logr.Logger
	wg     sync.WaitGroup
	peers  []peerBFD // by index in Config.Peers
}

// peerBFD is one peer's BFD session (sess nil: none yet).
type peerBFD struct {
	sess   *bfd.Session
	router netip.Addr // the session's peer address
	stop   context.CancelFunc
	done   chan struct{} // closed when the session's Run returned
}

func newBFDSessions(ctx context.Context, logger logr.Logger, peers int) *bfdSessions {
	return &bfdSessions{ctx: ctx, logger: logger, peers: make([]peerBFD, peers)}
}

// sessions are the running sessions, by peer index (nil: none).
func (b *bfdSessions) sessions() []*bfd.Session {
	if b == nil {
		return nil
	}
	out := make([]*bfd.Session, len(b.peers))
	for i, p := range b.peers {
		out[i] = p.sess
	}
	return out
}

// runBFD starts peer i's BFD session with its router at router, which the
// peer's session has as its neighbour, when the peer has BFD; a session with
// another address ends first (AdminDown: the router there is not failing,
// it is not this peer's any more). A no-op while the speaker is not
// running. The caller holds s.mu.
func (s *Speaker) runBFD(i int, r *peerRun, router netip.Addr) {
	b := s.bfd
	if b == nil || s.cfg.Peers[i].BFD == nil {
		return
	}
	cur := &b.peers[i]
	if cur.sess != nil {
		if cur.router == router {
			return
		}
		b.logger.Info("BFD session moved to the peer's new router address", "peer", s.cfg.Peers[i].Name, "from", cur.router, "to", router)
		cur.stop()
	}
	ctx, stop := context.WithCancel(b.ctx)
	done := make(chan struct{})
	sess := s.startBFD(ctx, b.logger, i, r, router)
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		defer close(done)
		sess.Run(ctx)
	}()
	*cur = peerBFD{sess: sess, router: router, stop: stop, done: done}
}

// startBFD returns peer i's BFD session with its router at router (its
// address, or its link-local address zoned with the peer's interface: the
// session then runs on that link, from this host's link-local address
// there); Run runs it. When BFD sees the path fail (RFC 5882 section 4.3:
// not when the router took its BFD session down on purpose) the BGP
// session is closed and dialed again, as when its hold timer expires,
// instead of after the hold time (resetOnBFD).
func (s *Speaker) startBFD(ctx context.Context, logger logr.Logger, i int, r *peerRun, router netip.Addr) *bfd.Session {
	p := s.cfg.Peers[i]
	cfg := bfd.Config{Peer: router, Local: p.LocalAddress, Hops: p.MultihopTTL,
		MinRx: p.BFD.ReceiveInterval, MinTx: p.BFD.TransmitInterval, Multiplier: p.BFD.Multiplier}
	return bfd.New(cfg, logger.WithName("bfd"), func(ev bfd.Event) {
		if !resetOnBFD(ev, r.stateAt(router)) {
			return
		}
		logger.Info("BFD session failed: resetting the BGP session", "peer", router, "diagnostic", ev.Diagnostic)
		r.resetSession()
	})
}

// resetOnBFD reports whether a BFD event resets the BGP session, in state
// bgp: only a failure of an Up session (not the router's AdminDown), and
// only while the BGP session is established. A BGP session that is not
// established has nothing to reset; were a reset asked for then to close
// the next session as soon as it is established, a router that makes a new
// BFD session (with a new discriminator) for each BGP session, as BIRD
// does, would take that BFD session down again, whose reset would close
// the session after, and so on: the BGP session would never stay up.
func resetOnBFD(ev bfd.Event, bgp string) bool {
	return ev.From == bfd.Up && ev.To == bfd.Down && !ev.RemoteAdminDown && bgp == StateEstablished
}

// routerDownWait bounds how long a stopping speaker waits after its Ceases
// for the routers to take their ends of the BFD sessions down.
const routerDownWait = 2 * time.Second

// waitRouterDown returns when no session of sessions is Up, or after d.
//
// BIRD 2 takes a BFD AdminDown for a failure (RFC 5882 section 3.2 says it
// is none), and a BFD failure of an established BGP session makes it refuse
// that neighbour's sessions for its error wait time (60 s, doubled on each
// error up to 300 s). An AdminDown sent right after the Cease can be handled
// before the Cease: the BFD session must go down only once the router has
// closed the BGP session. Both routers then show it on BFD: BIRD makes a new
// BFD session for the neighbour's next BGP session, whose first packets
// (Down, no Your Discriminator) take this end down, and FRR deletes its
// session, whose silence takes it down after the detection time.
func waitRouterDown(sessions []*bfd.Session, d time.Duration) {
	up := func() bool {
		return slices.ContainsFunc(sessions, func(s *bfd.Session) bool { return s != nil && s.State() == bfd.Up })
	}
	deadline := time.Now().Add(d)
	for up() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
}

// bfdState is the State of a peer's BFD session in PeerState: "" without
// one.
func bfdState(sess *bfd.Session) string {
	if sess == nil {
		return ""
	}
	return sess.State().String()
}
