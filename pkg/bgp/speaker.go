package bgp

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	api "github.com/osrg/gobgp/v3/api"
	"github.com/osrg/gobgp/v3/pkg/server"
	"k8s.io/klog/v2"
)

// connectRetry is how often a speaker re-dials a peer it has no session
// with (GoBGP waits between one and two times this).
const connectRetry = 5 * time.Second

// Speaker is an embedded BGP speaker. It runs once: New, Start, then Stop
// or the end of Start's context. Its methods are safe for concurrent use.
type Speaker struct {
	cfg Config

	mu      sync.Mutex
	paths   map[netip.Prefix]map[netip.Addr]uint32 // prefix → next hop → path identifier
	srv     *server.BgpServer                      // set while running
	started bool
	stopped bool
	stop    chan struct{} // closed by Stop
	done    chan struct{} // closed when Start returns
}

// PeerState is the state of the session with one configured peer.
type PeerState struct {
	Address netip.Addr
	// State is the BGP FSM state in lower case: "idle", "connect",
	// "active", "opensent", "openconfirm" or "established".
	State string
	// Uptime is how long the session has been established (0 otherwise).
	Uptime time.Duration
}

// New validates cfg and returns a speaker that is not started yet.
func New(cfg Config) (*Speaker, error) {
	c, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	return &Speaker{
		cfg:   c,
		paths: map[netip.Prefix]map[netip.Addr]uint32{},
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}, nil
}

// Start runs the speaker until ctx ends or Stop is called; it then closes the
// sessions (with a Cease notification, so the routers withdraw the speaker's
// routes at once) and returns nil. It never listens for connections, so it
// needs no privileges. The paths set before Start are announced from the
// first UPDATE on: they are added before the peers, so a router that kept the
// routes over a graceful restart sees no gap.
func (s *Speaker) Start(ctx context.Context) error {
	s.mu.Lock()
	if s.started || s.stopped {
		s.mu.Unlock()
		return errors.New("bgp start: the speaker was already started or stopped")
	}
	s.started = true
	s.mu.Unlock()
	defer close(s.done)

	logger := klog.FromContext(ctx)
	srv, err := s.startServer(ctx, logger)
	if err != nil {
		return err
	}
	watchCtx, cancelWatch := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWatch()
	if err := srv.WatchEvent(watchCtx, &api.WatchEventRequest{Peer: &api.WatchEventRequest_Peer{}}, peerStateLogger(logger)); err != nil {
		logger.Error(err, "Cannot watch BGP session states; they will not be logged")
	}
	logger.Info("BGP speaker started", "asn", s.cfg.ASN, "routerID", s.cfg.RouterID, "peers", len(s.cfg.Peers))

	select {
	case <-ctx.Done():
	case <-s.stop:
	}
	s.mu.Lock()
	s.srv = nil
	s.mu.Unlock()
	srv.Stop()
	logger.Info("BGP speaker stopped")
	return nil
}

// startServer starts GoBGP, adds the paths and then the peers.
func (s *Speaker) startServer(ctx context.Context, logger logr.Logger) (*server.BgpServer, error) {
	srv := server.NewBgpServer(server.LoggerOption(newGoBGPLogger(logger)))
	// GoBGP v3 has no way to end Serve: its goroutine outlives Stop, idle.
	go srv.Serve()
	err := srv.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{
		Asn:        s.cfg.ASN,
		RouterId:   s.cfg.RouterID.String(),
		ListenPort: -1, // dial only: no listener, no privileges
	}})
	if err != nil {
		return nil, fmt.Errorf("bgp start: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	err = func() error {
		for prefix, hops := range s.paths {
			for nh, id := range hops {
				if err := addPath(ctx, srv, prefix, nh, id); err != nil {
					return err
				}
			}
		}
		for _, p := range s.cfg.Peers {
			if err := srv.AddPeer(ctx, &api.AddPeerRequest{Peer: peerConfig(s.cfg.ASN, p)}); err != nil {
				return fmt.Errorf("add peer %s: %w", p.Address, err)
			}
		}
		return nil
	}()
	if err != nil {
		srv.Stop()
		return nil, fmt.Errorf("bgp start: %w", err)
	}
	s.srv = srv
	return srv, nil
}

// Stop closes the sessions and makes Start return; it waits for that. It is
// safe to call more than once, and before Start (Start then fails).
func (s *Speaker) Stop() {
	s.mu.Lock()
	started := s.started
	if !s.stopped {
		s.stopped = true
		close(s.stop)
	}
	s.mu.Unlock()
	if started {
		<-s.done
	}
}

// SetPaths makes nextHops the full set of paths announced for prefix (a /32
// or /128): one path per next hop, each with the next hop unchanged, so the
// router installs an ECMP route. It sends only what changed, new paths before
// withdrawals; an empty set withdraws the prefix. Before Start it only
// records the set. Each peer gets the prefixes of its own family.
func (s *Speaker) SetPaths(ctx context.Context, prefix netip.Prefix, nextHops []netip.Addr) error {
	hops, err := checkPaths(prefix, nextHops)
	if err != nil {
		return fmt.Errorf("bgp set paths: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.paths[prefix]
	if cur == nil {
		cur = map[netip.Addr]uint32{}
		s.paths[prefix] = cur
	}
	// cur follows what GoBGP has, also when a call fails half way.
	defer func() {
		if len(cur) == 0 {
			delete(s.paths, prefix)
		}
	}()
	var added, withdrawn int
	for _, nh := range hops {
		if _, ok := cur[nh]; ok {
			continue
		}
		used := map[uint32]bool{}
		for _, id := range cur {
			used[id] = true
		}
		id := pathID(nh, used)
		if s.srv != nil {
			if err := addPath(ctx, s.srv, prefix, nh, id); err != nil {
				return fmt.Errorf("bgp set paths: %w", err)
			}
		}
		cur[nh] = id
		added++
	}
	for nh, id := range cur {
		if slices.Contains(hops, nh) {
			continue
		}
		if s.srv != nil {
			if err := deletePath(ctx, s.srv, prefix, nh, id); err != nil {
				return fmt.Errorf("bgp set paths: %w", err)
			}
		}
		delete(cur, nh)
		withdrawn++
	}
	if added+withdrawn > 0 {
		klog.FromContext(ctx).V(2).Info("BGP paths changed", "prefix", prefix, "nextHops", hops,
			"added", added, "withdrawn", withdrawn, "running", s.srv != nil)
	}
	return nil
}

func addPath(ctx context.Context, srv *server.BgpServer, prefix netip.Prefix, nh netip.Addr, id uint32) error {
	p, err := apiPath(prefix, nh, id)
	if err != nil {
		return err
	}
	if _, err := srv.AddPath(ctx, &api.AddPathRequest{TableType: api.TableType_GLOBAL, Path: p}); err != nil {
		return fmt.Errorf("add path %s via %s: %w", prefix, nh, err)
	}
	return nil
}

func deletePath(ctx context.Context, srv *server.BgpServer, prefix netip.Prefix, nh netip.Addr, id uint32) error {
	p, err := apiPath(prefix, nh, id)
	if err != nil {
		return err
	}
	if err := srv.DeletePath(ctx, &api.DeletePathRequest{TableType: api.TableType_GLOBAL, Family: p.Family, Path: p}); err != nil {
		return fmt.Errorf("withdraw path %s via %s: %w", prefix, nh, err)
	}
	return nil
}

// Prefixes returns a copy of the announced prefixes and their next hops
// (sorted); before Start, those that Start will announce.
func (s *Speaker) Prefixes() map[netip.Prefix][]netip.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[netip.Prefix][]netip.Addr, len(s.paths))
	for prefix, hops := range s.paths {
		out[prefix] = slices.SortedFunc(maps.Keys(hops), netip.Addr.Compare)
	}
	return out
}

// PeerStates returns the session state of each configured peer, in the
// order of Config.Peers; "idle" when the speaker is not running.
func (s *Speaker) PeerStates() []PeerState {
	s.mu.Lock()
	srv := s.srv
	s.mu.Unlock()
	found := map[netip.Addr]PeerState{}
	if srv != nil {
		_ = srv.ListPeer(context.Background(), &api.ListPeerRequest{}, func(p *api.Peer) {
			if st, ok := peerState(p); ok {
				found[st.Address] = st
			}
		})
	}
	out := make([]PeerState, len(s.cfg.Peers))
	for i, p := range s.cfg.Peers {
		st, ok := found[p.Address]
		if !ok {
			st = PeerState{Address: p.Address, State: "idle"}
		}
		out[i] = st
	}
	return out
}

// peerState reads the state of a GoBGP peer.
func peerState(p *api.Peer) (PeerState, bool) {
	if p.GetState() == nil {
		return PeerState{}, false
	}
	addr, err := netip.ParseAddr(p.GetState().GetNeighborAddress())
	if err != nil {
		addr, err = netip.ParseAddr(p.GetConf().GetNeighborAddress())
		if err != nil {
			return PeerState{}, false
		}
	}
	st := PeerState{Address: addr, State: strings.ToLower(p.GetState().GetSessionState().String())}
	if st.State == "unknown" {
		st.State = "idle"
	}
	if up := p.GetTimers().GetState().GetUptime(); st.State == "established" && up != nil {
		st.Uptime = time.Since(up.AsTime())
	}
	return st, true
}

// peerStateLogger logs session changes: reaching and leaving established at
// info level, the rest at V(4).
func peerStateLogger(logger logr.Logger) func(*api.WatchEventResponse) {
	last := map[netip.Addr]string{}
	var mu sync.Mutex
	return func(ev *api.WatchEventResponse) {
		st, ok := peerState(ev.GetPeer().GetPeer())
		if !ok || ev.GetPeer().GetType() != api.WatchEventResponse_PeerEvent_STATE {
			return
		}
		mu.Lock()
		prev := last[st.Address]
		last[st.Address] = st.State
		mu.Unlock()
		if prev == st.State {
			return
		}
		l := logger.V(4)
		if st.State == "established" || prev == "established" {
			l = logger
		}
		l.Info("BGP session state changed", "peer", st.Address, "state", st.State, "previous", prev)
	}
}

// peerConfig is GoBGP's configuration of p: the unicast family of its
// address only, ADD-PATH send, and graceful restart when asked for.
func peerConfig(localASN uint32, p Peer) *api.Peer {
	hold := uint64(p.HoldTime / time.Second)
	af := &api.AfiSafi{
		Config:   &api.AfiSafiConfig{Family: family(p.Address), Enabled: true},
		AddPaths: &api.AddPaths{Config: &api.AddPathsConfig{SendMax: maxNextHops}},
	}
	peer := &api.Peer{
		Conf: &api.PeerConf{
			NeighborAddress: p.Address.String(),
			PeerAsn:         p.ASN,
			LocalAsn:        localASN,
			AuthPassword:    p.Password,
		},
		Timers: &api.Timers{Config: &api.TimersConfig{
			HoldTime:          hold,
			KeepaliveInterval: max(hold/3, 1),
			ConnectRetry:      uint64(connectRetry / time.Second),
		}},
		Transport: &api.Transport{RemotePort: uint32(p.Port)},
		AfiSafis:  []*api.AfiSafi{af},
	}
	if p.LocalAddress.IsValid() {
		peer.Transport.LocalAddress = p.LocalAddress.String()
	}
	if p.GracefulRestart {
		peer.GracefulRestart = &api.GracefulRestart{Enabled: true, RestartTime: uint32(p.RestartTime / time.Second)}
		af.MpGracefulRestart = &api.MpGracefulRestart{Config: &api.MpGracefulRestartConfig{Enabled: true}}
	}
	return peer
}
