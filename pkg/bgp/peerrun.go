package bgp

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/metal-ccm/metal-ccm/pkg/bgp/session"
	"github.com/metal-ccm/metal-ccm/pkg/bgp/wire"
)

// peerRun keeps the session with one peer (its index in cfg.Peers): it
// dials the peer's router, and once established sends it every path of
// the speaker it carries, an End-of-RIB, and then what changes (out). A
// session that ends is dialed again after connectRetry (idleAfterReset
// after a reset by BFD).
type peerRun struct {
	s      *Speaker
	i      int
	logger logr.Logger
	out    *adjOut

	mu       sync.Mutex
	neighbor netip.Addr // invalid: the router is not known yet
	state    string
	upSince  time.Time
	sess     *session.Session // the established session, if any
	moved    chan struct{}    // cap 1: neighbor changed
	reset    bool             // the session was reset: dial again soon
	cease    bool             // Stop: end with a Cease
	done     chan struct{}
}

func newPeerRun(s *Speaker, i int, logger logr.Logger, neighbor netip.Addr) *peerRun {
	return &peerRun{s: s, i: i, logger: logger, out: newAdjOut(), neighbor: neighbor, state: "idle",
		moved: make(chan struct{}, 1), done: make(chan struct{})}
}

// config is the session's config with the router at neighbor.
func (r *peerRun) config(neighbor netip.Addr) session.Config {
	p := r.s.cfg.Peers[r.i]
	c := session.Config{
		LocalASN: r.s.cfg.ASN, PeerASN: p.ASN, RouterID: r.s.cfg.RouterID, Neighbor: neighbor, Port: p.Port,
		LocalAddress: p.LocalAddress, HoldTime: p.HoldTime, Password: p.Password, MultihopTTL: p.MultihopTTL,
		TTLSecurity: p.TTLSecurity, AddPathSend: true, GracefulRestart: p.GracefulRestart, RestartTime: p.RestartTime,
		ExtendedNextHop: p.Interface != "",
	}
	for _, is4 := range peerIs4(p) {
		if is4 {
			c.Families = append(c.Families, wire.IPv4Unicast)
		} else {
			c.Families = append(c.Families, wire.IPv6Unicast)
		}
	}
	return c
}

// run keeps the session until ctx ends; it then closes it, with a Cease
// if stop said so.
func (r *peerRun) run(ctx context.Context) {
	defer close(r.done)
	for ctx.Err() == nil {
		r.mu.Lock()
		nb := r.neighbor
		r.mu.Unlock()
		if !nb.IsValid() {
			select {
			case <-ctx.Done():
				return
			case <-r.moved:
			}
			continue
		}
		r.setState("connect")
		sess, err := session.Establish(ctx, r.config(nb))
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			r.logger.V(4).Info("BGP session not established", "peer", nb, "err", err)
			r.setState("active")
			r.wait(ctx, connectRetry)
			continue
		}
		r.established(ctx, nb, sess)
	}
	r.setState("idle")
}

// wait waits d, or less when the neighbor moved or ctx ends.
func (r *peerRun) wait(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	case <-r.moved:
	}
}

// established runs an established session until it ends: every path
// first, with an End-of-RIB after them, then what changes.
func (r *peerRun) established(ctx context.Context, nb netip.Addr, sess *session.Session) {
	r.mu.Lock()
	r.sess, r.state, r.upSince, r.reset = sess, StateEstablished, time.Now(), false
	r.mu.Unlock()
	r.logger.Info("BGP session state changed", "peer", nb, "state", StateEstablished)
	r.out.resendAll() // a new session: the router has nothing of it yet
	sctx, cancel := context.WithCancelCause(ctx)
	sendErr := make(chan error, 1)
	go func() { sendErr <- r.send(sctx, sess) }()
	err := sess.Run(sctx, session.Handlers{RouteRefresh: func(wire.Family) { r.out.resendAll() }})
	cancel(err)
	sess.Interrupt() // a sender blocked in a write (the router reads nothing) returns
	if serr := <-sendErr; serr != nil && !errors.Is(serr, context.Canceled) && err == nil {
		err = serr
	}
	r.mu.Lock()
	r.sess = nil
	cease, reset := r.cease, r.reset
	r.mu.Unlock()
	switch {
	case ctx.Err() != nil && cease:
		sess.Cease()
	default:
		sess.Close()
	}
	r.setState("idle")
	r.logger.Info("BGP session state changed", "peer", nb, "state", "idle", "previous", StateEstablished, "reason", err)
	if ctx.Err() == nil {
		d := connectRetry
		if reset {
			d = idleAfterReset
		}
		r.wait(ctx, d)
	}
}

// send sends the paths as they change until ctx ends or a write fails:
// the first flush sends everything, then the End-of-RIB.
func (r *peerRun) send(ctx context.Context, sess *session.Session) error {
	first := true
	for {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-r.out.kick:
		}
		if err := r.s.flush(r.i, r.out, sess, first); err != nil {
			sess.Close() // Run returns
			return err
		}
		first = false
	}
}

func (r *peerRun) setState(st string) {
	r.mu.Lock()
	r.state = st
	if st != StateEstablished {
		r.upSince = time.Time{}
	}
	r.mu.Unlock()
}

// peerState is the session's state, as PeerStates reports it.
func (r *peerRun) peerState() PeerState {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := PeerState{Address: r.neighbor, State: r.state}
	if r.state == StateEstablished {
		st.Uptime = time.Since(r.upSince)
	}
	return st
}

// stateAt is the session's state if its router is at addr, else "idle".
func (r *peerRun) stateAt(addr netip.Addr) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.neighbor.WithZone("") != addr.WithZone("") {
		return "idle"
	}
	return r.state
}

// resetSession closes an established session (BFD saw the path fail); it
// is dialed again after idleAfterReset.
func (r *peerRun) resetSession() {
	r.mu.Lock()
	sess := r.sess
	if sess != nil {
		r.reset = true
	}
	r.mu.Unlock()
	if sess != nil {
		sess.Close()
	}
}

// move has the session dial the router at to (an interface peer's router
// moved, or was found).
func (r *peerRun) move(to netip.Addr) {
	r.mu.Lock()
	r.neighbor = to
	r.mu.Unlock()
	select {
	case r.moved <- struct{}{}:
	default:
	}
}
