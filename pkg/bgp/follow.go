package bgp

import (
	"context"
	"net/netip"
	"time"

	"github.com/go-logr/logr"
)

// routerRetry is how often a peer on an interface looks for its router on
// the link while its session is not established.
const routerRetry = 2 * time.Second

// routerFollower keeps a peer on an interface with the router of its
// link: it adds the peer once the router is found, and moves it (with its
// BFD session) when the link's router has another address, as a replaced
// router has. An established session is with the router: nothing is looked
// for then.
type routerFollower struct {
	// find is the router's address on the link (Peer.neighbor).
	find func() (netip.Addr, error)
	// state is the BGP state of the session with the peer at an address.
	state func(netip.Addr) string
	// move takes the peer from an address (invalid: none) to another, and
	// returns the address it has after (from when nothing changed, invalid
	// when it was deleted but not added again).
	move func(from, to netip.Addr) (netip.Addr, error)
}

// step looks once, with the peer at cur (invalid: not added), and returns
// the peer's address after.
func (f routerFollower) step(cur netip.Addr) (netip.Addr, bool, error) {
	if cur.IsValid() && f.state(cur) == StateEstablished {
		return cur, false, nil
	}
	found, err := f.find()
	if err != nil || found == cur {
		return cur, false, err
	}
	after, err := f.move(cur, found)
	return after, after != cur, err
}

// followRouter runs peer i's routerFollower on srv, the peer at cur
// (invalid: not added yet), every routerRetry until ctx ends or the speaker
// stops. A peer with its router's address given has nothing to follow.
func (s *Speaker) followRouter(ctx context.Context, logger logr.Logger, r *peerRun, i int, cur netip.Addr) {
	p := s.cfg.Peers[i]
	if p.Address.IsValid() && cur.IsValid() {
		return
	}
	f := routerFollower{
		find:  p.neighbor,
		state: r.stateAt,
		move: func(from, to netip.Addr) (netip.Addr, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.closing {
				return from, nil
			}
			after, err := s.movePeer(r, i, to)
			if err != nil {
				logger.Error(err, "BGP peer not moved to its link's router", "peer", p.Name, "from", from, "to", to)
			}
			return after, err
		},
	}
	t := time.NewTicker(routerRetry)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		before := cur
		var moved bool
		var err error
		cur, moved, err = f.step(cur)
		switch {
		case err != nil:
			logger.V(4).Info("BGP peer's router not found on its link", "peer", p.Name, "interface", p.Interface, "err", err)
		case moved && !before.IsValid():
			logger.Info("BGP peer's router found on its link", "peer", p.Name, "router", cur)
		case moved:
			logger.Info("BGP peer's router moved on its link", "peer", p.Name, "from", before, "to", cur)
		}
		if p.Address.IsValid() && cur.IsValid() {
			return // added; the given address never changes
		}
	}
}

// movePeer has peer i's session dial its router at to, with its BFD
// session there; it returns the peer's address after. The caller holds
// s.mu.
func (s *Speaker) movePeer(r *peerRun, i int, to netip.Addr) (netip.Addr, error) {
	r.move(to)
	s.runBFD(i, r, to)
	return to, nil
}
