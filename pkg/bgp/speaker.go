package bgp

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/config/oc"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
	"github.com/osrg/gobgp/v4/pkg/server"
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/community"
	"github.com/metal-ccm/metal-ccm/pkg/bgp/limits"
)

// grDeferral is how long a restarting speaker waits for the router's
// End-of-RIB before it sends its routes anyway.
const grDeferral = 10 * time.Second

// connectRetry is how often a speaker re-dials a peer it has no session
// with (GoBGP waits between one and two times this).
const connectRetry = 5 * time.Second

// idleAfterReset is how long a session reset by the speaker (its BFD
// session failed) stays idle before it is dialed again.
const idleAfterReset = time.Second

// Speaker is an embedded BGP speaker. It runs once: New, Start, then Stop
// or the end of Start's context. Its methods are safe for concurrent use.
type Speaker struct {
	cfg Config

	mu    sync.Mutex
	paths map[netip.Prefix]prefixPaths // prefix → its paths (next hops, path identifiers)
	// extra are the communities the Services of a host prefix add to it
	// (SetCommunities); only prefixes with some are present.
	extra map[netip.Prefix]community.Set
	// weights are, by host prefix, the ready endpoints of each next hop
	// whose paths carry a link bandwidth community (SetWeights); only
	// prefixes with some are present.
	weights map[netip.Prefix]map[netip.Addr]int
	// aggs are, by peer index, the aggregates the policy sends that peer;
	// nil for a peer without any.
	aggs []map[netip.Prefix]*aggregate
	// aggRetry are the aggregates whose last sync failed.
	aggRetry map[aggKey]bool
	// servers, while running, has one GoBGP server per peer (by index in
	// cfg.Peers): GoBGP's graceful-restart state is per server, and a
	// shared one would let the first peer to finish the restart end it
	// for the others (whose routers would then flush the kept routes).
	servers []*server.BgpServer
	// bfd, while running, has the peers' BFD sessions.
	bfd     *bfdSessions
	started bool
	// closing is set when Start stops the servers: a peer on an interface
	// is not added or moved any more (followRouter).
	closing bool
	stopped bool
	stop    chan struct{} // closed by Stop
	done    chan struct{} // closed when Start returns
}

// PeerState is the state of the session with one configured peer.
type PeerState struct {
	// Name is the peer's name (Peer.Name).
	Name    string
	Address netip.Addr
	// Interface is the link of a peer on an interface (Peer.Interface).
	Interface string
	// State is the BGP FSM state in lower case: "idle", "connect",
	// "active", "opensent", "openconfirm" or StateEstablished.
	State string
	// Uptime is how long the session has been established (0 otherwise).
	Uptime time.Duration
	// BFD is the state of the peer's BFD session: "up", "down", "init" or
	// "admindown"; "" for a peer without BFD, while the speaker is not
	// running, or while the router of a peer on an interface is not found.
	BFD string
}

// StateEstablished is the State of a session that is up.
const StateEstablished = "established"

// Established reports whether the session is up.
func (p PeerState) Established() bool { return p.State == StateEstablished }

// Where is the router as the status and the metrics name it: its address
// (zoned on a link-local session), or the interface while the router there
// is not known yet.
func (p PeerState) Where() string {
	if !p.Address.IsValid() {
		return p.Interface
	}
	return p.Address.String()
}

// New validates cfg and returns a speaker that is not started yet.
func New(cfg Config) (*Speaker, error) {
	c, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	return &Speaker{
		cfg:      c,
		paths:    map[netip.Prefix]prefixPaths{},
		extra:    map[netip.Prefix]community.Set{},
		weights:  map[netip.Prefix]map[netip.Addr]int{},
		aggs:     make([]map[netip.Prefix]*aggregate, len(c.Peers)),
		aggRetry: map[aggKey]bool{},
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}, nil
}

// Start runs the speaker until ctx ends or Stop is called; it then closes the
// sessions with a Cease notification, so the routers withdraw the speaker's
// routes at once, and returns nil. It never listens for connections, so it
// needs no privileges. The paths set before Start are added before the
// peers, and with graceful restart every start is announced as a restart:
// a router that kept the routes of a speaker that died (no Cease) keeps
// them until this one has sent all of its own, so the routes never go away.
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
	watchCtx, cancelWatch := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWatch()
	// The BFD sessions start with their peers (runBFD), a peer on an
	// interface once its router is found.
	bfdCtx, stopBFD := context.WithCancel(context.WithoutCancel(ctx))
	bfdRunning := newBFDSessions(bfdCtx, logger, len(s.cfg.Peers))
	defer func() {
		stopBFD()
		bfdRunning.wg.Wait()
	}()
	s.mu.Lock()
	s.bfd = bfdRunning
	s.mu.Unlock()
	servers, err := s.startServers(ctx, watchCtx, logger)
	if err != nil {
		s.mu.Lock()
		s.bfd, s.closing = nil, true
		s.mu.Unlock()
		return err
	}
	logger.Info("BGP speaker started", "asn", s.cfg.ASN, "routerID", s.cfg.RouterID, "peers", len(s.cfg.Peers))

	select {
	case <-ctx.Done():
	case <-s.stop:
	}
	s.mu.Lock()
	sessions := s.bfd.sessions()
	s.servers, s.bfd, s.closing = nil, nil, true
	s.mu.Unlock()
	stopAll(servers)
	// After the Ceases, once the routers have closed their BGP sessions:
	// the BFD sessions end with AdminDown (waitRouterDown).
	waitRouterDown(sessions, routerDownWait)
	stopBFD()
	bfdRunning.wg.Wait()
	logger.Info("BGP speaker stopped")
	return nil
}

// startServers starts one GoBGP server per peer, each with the paths of its
// peer's family added before the peer.
func (s *Speaker) startServers(ctx, watchCtx context.Context, logger logr.Logger) ([]*server.BgpServer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	servers := make([]*server.BgpServer, 0, len(s.cfg.Peers))
	for i, p := range s.cfg.Peers {
		srv, err := s.startServer(ctx, watchCtx, logger, i)
		if err != nil {
			stopAll(servers)
			return nil, fmt.Errorf("bgp start: peer %s: %w", p.Address, err)
		}
		servers = append(servers, srv)
	}
	s.servers = servers
	return servers, nil
}

func (s *Speaker) startServer(ctx, watchCtx context.Context, logger logr.Logger, i int) (*server.BgpServer, error) {
	p := s.cfg.Peers[i]
	srv := server.NewBgpServer(server.LoggerOption(newGoBGPLogger(logger), nil))
	go srv.Serve()
	err := srv.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{
		Asn:        s.cfg.ASN,
		RouterId:   s.cfg.RouterID.String(),
		ListenPort: -1, // dial only: no listener, no privileges
		// The peer's family only: GoBGP v4 makes two sharded tables for
		// every family it is given, and about 10 MB of them when given none
		// (it then takes all).
		Families: globalFamilies(p),
	}})
	if err != nil {
		return nil, err
	}
	err = func() error {
		for prefix, pp := range s.paths {
			attrs, ok := s.hostAttrs(i, prefix)
			if !ok {
				continue
			}
			if err := addPaths(srv, prefix, pp.paths(), attrs); err != nil {
				return err
			}
		}
		for prefix, a := range s.aggs[i] {
			if err := sendAggregate(srv, prefix, a); err != nil {
				return err
			}
		}
		if err := srv.WatchEvent(watchCtx, server.WatchEventMessageCallbacks{OnPeerUpdate: peerStateLogger(logger)}, server.WatchPeer()); err != nil {
			return fmt.Errorf("watch session state: %w", err)
		}
		if p.Interface != "" {
			// Before the session: a router that learns its unnumbered
			// neighbours from Router Advertisements refuses it until then.
			go advertiseSelf(watchCtx, logger, p.Interface)
		}
		nb, err := p.neighbor()
		if err != nil {
			// The router may not have advertised itself yet: the
			// session starts once it has.
			logger.Info("BGP peer's router not found on its link yet: looking again", "peer", p.Name, "interface", p.Interface, "err", err)
			go s.followRouter(watchCtx, logger, srv, i, netip.Addr{})
			return nil
		}
		if err := srv.AddPeer(ctx, &api.AddPeerRequest{Peer: peerConfig(s.cfg.ASN, p, nb)}); err != nil {
			return fmt.Errorf("add peer: %w", err)
		}
		s.runBFD(i, srv, nb)
		if p.Interface != "" {
			go s.followRouter(watchCtx, logger, srv, i, nb)
		}
		return nil
	}()
	if err != nil {
		srv.Stop()
		return nil, err
	}
	return srv, nil
}

// neighbor is the router's address as GoBGP takes it: Address, or for a
// peer on an interface the router's link-local address there, zoned.
func (p Peer) neighbor() (netip.Addr, error) {
	if p.Interface == "" {
		return p.Address, nil
	}
	a := p.Address
	if !a.IsValid() {
		var err error
		if a, err = findRouter(p.Interface); err != nil {
			return netip.Addr{}, err
		}
	}
	return a.WithZone(p.Interface), nil
}

// stopAll stops GoBGP servers, each closing its session with a Cease.
func stopAll(servers []*server.BgpServer) {
	var wg sync.WaitGroup
	for _, srv := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			srv.Stop()
		}()
	}
	wg.Wait()
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
// router installs an ECMP route. The speaker may keep nextHops: the caller
// must not modify it afterwards. It sends only what changed, new paths before
// withdrawals; an empty set withdraws the prefix. Before Start it only
// records the set. Each peer gets the prefixes of its own family.
func (s *Speaker) SetPaths(ctx context.Context, prefix netip.Prefix, nextHops []netip.Addr) (retErr error) {
	hops, err := checkPaths(prefix, nextHops)
	if err != nil {
		return fmt.Errorf("bgp set paths: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.paths[prefix].paths()
	var added, withdrawn int
	// The aggregates whose next hops changed are sent last, also when a
	// host path failed: they follow cur, which follows GoBGP. Those whose
	// last sync failed are sent again with them (the caller retries a call
	// that failed).
	var aggsChanged []aggKey
	defer func() {
		for k := range s.aggRetry {
			aggsChanged = append(aggsChanged, k)
		}
		for _, k := range aggsChanged {
			err := s.syncAggregate(k)
			if err == nil {
				delete(s.aggRetry, k)
				continue
			}
			s.aggRetry[k] = true
			if retErr == nil {
				retErr = fmt.Errorf("bgp set paths: %w", err)
			}
		}
	}()
	// cur follows what GoBGP has, also when a call fails half way; it is
	// stored before the aggregates are sent (deferred calls run last first).
	defer func() {
		if len(cur) == 0 {
			delete(s.paths, prefix)
		} else {
			s.paths[prefix] = keep(cur, hops)
		}
	}()
	// New paths first, in one call per server, then the withdrawals. A
	// call that fails leaves cur as it was: GoBGP may have taken part of
	// it, and taking it again (the caller retries) is harmless.
	var add hopPaths
	var used map[uint32]bool // the identifiers in cur, made when first needed
	for _, nh := range hops {
		if _, ok := cur.find(nh); ok {
			continue
		}
		if used == nil {
			used = make(map[uint32]bool, len(cur)+len(hops))
			for _, h := range cur {
				used[h.id] = true
			}
		}
		id := pathID(nh, used)
		used[id] = true
		add = append(add, hopPath{nh, id})
	}
	if len(add) > 0 {
		if err := s.eachHostServer(prefix, func(srv *server.BgpServer, attrs Attributes) error {
			return addPaths(srv, prefix, add, attrs)
		}); err != nil {
			return fmt.Errorf("bgp set paths: %w", err)
		}
		for _, h := range add {
			at, _ := cur.find(h.hop)
			cur = slices.Insert(cur, at, h)
			aggsChanged = append(aggsChanged, s.countHop(prefix, h.hop, 1)...)
		}
		added = len(add)
	}
	var gone hopPaths
	for _, h := range cur {
		if _, in := slices.BinarySearchFunc(hops, h.hop, netip.Addr.Compare); !in { // hops is sorted
			gone = append(gone, h)
		}
	}
	if len(gone) > 0 {
		if err := s.eachHostServer(prefix, func(srv *server.BgpServer, _ Attributes) error {
			return deletePaths(srv, prefix, gone)
		}); err != nil {
			return fmt.Errorf("bgp set paths: %w", err)
		}
		cur = slices.DeleteFunc(cur, func(h hopPath) bool {
			_, in := slices.BinarySearchFunc(hops, h.hop, netip.Addr.Compare)
			return !in
		})
		for _, h := range gone {
			aggsChanged = append(aggsChanged, s.countHop(prefix, h.hop, -1)...)
		}
		withdrawn = len(gone)
	}
	if added+withdrawn > 0 {
		klog.FromContext(ctx).V(2).Info("BGP paths changed", "prefix", prefix, "nextHops", hops,
			"added", added, "withdrawn", withdrawn, "running", s.servers != nil)
	}
	return nil
}

// SetCommunities makes c the communities that the Services of host prefix
// add to its paths (on top of its advertisement's), and sends its paths
// again where they changed. Aggregates keep their advertisement's own.
func (s *Speaker) SetCommunities(ctx context.Context, prefix netip.Prefix, c community.Set) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.extra[prefix].Equal(c) {
		return nil
	}
	if c.Empty() {
		delete(s.extra, prefix)
	} else {
		s.extra[prefix] = c
	}
	// A path added again with its identifier replaces the one GoBGP has.
	return s.eachHostServer(prefix, func(srv *server.BgpServer, attrs Attributes) error {
		if err := addPaths(srv, prefix, s.paths[prefix].paths(), attrs); err != nil {
			return fmt.Errorf("bgp set communities: %w", err)
		}
		return nil
	})
}

// eachHostServer calls fn with each running server whose peer gets prefix
// as a host route, and the attributes of its paths there; the caller holds
// s.mu. Adding and withdrawing are idempotent in GoBGP, so a retry after a
// partial failure is safe.
func (s *Speaker) eachHostServer(prefix netip.Prefix, fn func(*server.BgpServer, Attributes) error) error {
	for i, srv := range s.servers {
		attrs, ok := s.hostAttrs(i, prefix)
		if !ok {
			continue
		}
		if err := fn(srv, attrs); err != nil {
			return err
		}
	}
	return nil
}

// addPaths sends srv the paths of prefix, in one call.
func addPaths(srv *server.BgpServer, prefix netip.Prefix, paths hopPaths, attrs Attributes) error {
	if len(paths) == 0 {
		return nil
	}
	ps, err := apiPaths(prefix, paths, attrs)
	if err != nil {
		return err
	}
	if _, err := srv.AddPath(apiutil.AddPathRequest{Paths: ps}); err != nil {
		return fmt.Errorf("add %d paths of %s: %w", len(ps), prefix, err)
	}
	return nil
}

// deletePaths withdraws the paths of prefix from srv, in one call.
func deletePaths(srv *server.BgpServer, prefix netip.Prefix, paths hopPaths) error {
	if len(paths) == 0 {
		return nil
	}
	ps, err := apiPaths(prefix, paths, Attributes{})
	if err != nil {
		return err
	}
	if err := srv.DeletePath(apiutil.DeletePathRequest{Paths: ps}); err != nil {
		return fmt.Errorf("withdraw %d paths of %s: %w", len(ps), prefix, err)
	}
	return nil
}

// Prefixes returns a copy of the announced prefixes and their next hops
// (sorted); before Start, those that Start will announce.
func (s *Speaker) Prefixes() map[netip.Prefix][]netip.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[netip.Prefix][]netip.Addr, len(s.paths))
	for prefix, pp := range s.paths {
		out[prefix] = slices.Clone(pp.hops)
	}
	return out
}

// PrefixCount is the number of announced prefixes (Prefixes without the
// copy: a metrics scrape must not copy 10,000 prefixes' next hops).
func (s *Speaker) PrefixCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.paths)
}

// PeerStates returns the session state of each configured peer, in the
// order of Config.Peers; "idle" when the speaker is not running.
func (s *Speaker) PeerStates() []PeerState {
	s.mu.Lock()
	servers, sessions := s.servers, s.bfd.sessions()
	s.mu.Unlock()
	out := make([]PeerState, len(s.cfg.Peers))
	for i, p := range s.cfg.Peers {
		st := PeerState{Address: p.Address, State: "idle"}
		if i < len(servers) {
			// One peer per server.
			_ = servers[i].ListPeer(context.Background(), &api.ListPeerRequest{}, func(ap *api.Peer) {
				if got, ok := peerState(ap); ok {
					st = got
				}
			})
		}
		st.Name, st.Interface = p.Name, p.Interface
		if i < len(sessions) {
			st.BFD = bfdState(sessions[i])
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
	st := PeerState{Address: addr, State: sessionStates[p.GetState().GetSessionState()]}
	if st.State == "" {
		st.State = "idle"
	}
	if up := p.GetTimers().GetState().GetUptime(); st.State == StateEstablished && up != nil {
		st.Uptime = time.Since(up.AsTime())
	}
	return st, true
}

// sessionStates are the names of the session states GoBGP's API reports, as
// PeerState has them.
var sessionStates = map[api.PeerState_SessionState]string{
	api.PeerState_SESSION_STATE_IDLE:        "idle",
	api.PeerState_SESSION_STATE_CONNECT:     "connect",
	api.PeerState_SESSION_STATE_ACTIVE:      "active",
	api.PeerState_SESSION_STATE_OPENSENT:    "opensent",
	api.PeerState_SESSION_STATE_OPENCONFIRM: "openconfirm",
	api.PeerState_SESSION_STATE_ESTABLISHED: StateEstablished,
}

// fsmStates are the names of GoBGP's FSM states, as PeerState has them.
var fsmStates = map[bgp.FSMState]string{
	bgp.BGP_FSM_IDLE:        "idle",
	bgp.BGP_FSM_CONNECT:     "connect",
	bgp.BGP_FSM_ACTIVE:      "active",
	bgp.BGP_FSM_OPENSENT:    "opensent",
	bgp.BGP_FSM_OPENCONFIRM: "openconfirm",
	bgp.BGP_FSM_ESTABLISHED: StateEstablished,
}

// peerStateLogger logs session changes: reaching and leaving established at
// info level, the rest at V(4).
func peerStateLogger(logger logr.Logger) func(*apiutil.WatchEventMessage_PeerEvent, time.Time) {
	last := map[netip.Addr]string{}
	var mu sync.Mutex
	return func(ev *apiutil.WatchEventMessage_PeerEvent, _ time.Time) {
		if ev.Type != apiutil.PEER_EVENT_STATE {
			return
		}
		addr := ev.Peer.State.NeighborAddress
		if !addr.IsValid() {
			addr = ev.Peer.Conf.NeighborAddress
		}
		state, ok := fsmStates[ev.Peer.State.SessionState]
		if !ok {
			state = "idle"
		}
		mu.Lock()
		prev := last[addr]
		last[addr] = state
		mu.Unlock()
		if prev == state {
			return
		}
		l := logger.V(4)
		if state == StateEstablished || prev == StateEstablished {
			l = logger
		}
		l.Info("BGP session state changed", "peer", addr, "state", state, "previous", prev)
	}
}

// peerConfig is GoBGP's configuration of p: the unicast family of its
// address only, ADD-PATH send, and graceful restart when asked for.
func peerConfig(localASN uint32, p Peer, neighbor netip.Addr) *api.Peer {
	hold := uint64(p.HoldTime / time.Second) //nolint:gosec // withDefaults: 0, or 3s to 65535s
	var afs []*api.AfiSafi
	for _, f := range apiFamilies(p) {
		afs = append(afs, &api.AfiSafi{
			Config:   &api.AfiSafiConfig{Family: f, Enabled: true},
			AddPaths: &api.AddPaths{Config: &api.AddPathsConfig{SendMax: limits.MaxNextHops}},
		})
	}
	peer := &api.Peer{
		Conf: &api.PeerConf{
			NeighborAddress: neighbor.String(),
			PeerAsn:         p.ASN,
			LocalAsn:        localASN,
			AuthPassword:    p.Password,
		},
		Timers: &api.Timers{Config: &api.TimersConfig{
			HoldTime:          hold,
			KeepaliveInterval: max(hold/3, 1),
			ConnectRetry:      uint64(connectRetry / time.Second),
			// After a reset (BFD down, startBFD) dial again soon, not
			// after GoBGP's 30 s: the path may be back already.
			IdleHoldTimeAfterReset: uint64(idleAfterReset / time.Second),
		}},
		Transport: &api.Transport{RemotePort: uint32(p.Port)},
		AfiSafis:  afs,
	}
	if p.LocalAddress.IsValid() {
		peer.Transport.LocalAddress = p.LocalAddress.String()
	}
	if p.MultihopTTL > 0 {
		peer.EbgpMultihop = &api.EbgpMultihop{Enabled: true, MultihopTtl: uint32(p.MultihopTTL)}
	}
	if p.TTLSecurity {
		peer.TtlSecurity = &api.TtlSecurity{Enabled: true, TtlMin: ttlMin(p.MultihopTTL)}
	}
	if p.GracefulRestart {
		// Every start counts as a restart (the speaker cannot tell): the
		// OPEN says so and that forwarding was kept, so a router that
		// holds the routes of the previous session keeps them until this
		// session's End-of-RIB, instead of flushing them when it comes up.
		// GoBGP then sends its routes once the router's End-of-RIB came,
		// or after the deferral time.
		peer.GracefulRestart = &api.GracefulRestart{
			Enabled:         true,
			RestartTime:     uint32(p.RestartTime / time.Second), //nolint:gosec // withDefaults: at most 4095s
			LocalRestarting: true,
			DeferralTime:    uint32(grDeferral / time.Second),
		}
		for _, af := range afs {
			af.MpGracefulRestart = &api.MpGracefulRestart{Config: &api.MpGracefulRestartConfig{Enabled: true}}
		}
	}
	return peer
}

// ttlMin is the least TTL GTSM takes from a router hops away (0: directly
// connected, one hop): it sent with 255, and each hop took one.
func ttlMin(hops uint8) uint32 {
	return 256 - uint32(max(hops, 1))
}

// peerIs4 are the unicast families of p's session, IPv4 (true) and IPv6
// (false): its address's, or both on a link-local session.
func peerIs4(p Peer) []bool {
	if p.Interface != "" {
		return []bool{true, false}
	}
	return []bool{p.Address.Is4()}
}

// apiFamilies are the unicast families of p's session in GoBGP's
// configuration API.
func apiFamilies(p Peer) []*api.Family {
	var out []*api.Family
	for _, is4 := range peerIs4(p) {
		if is4 {
			out = append(out, &api.Family{Afi: api.Family_AFI_IP, Safi: api.Family_SAFI_UNICAST})
		} else {
			out = append(out, &api.Family{Afi: api.Family_AFI_IP6, Safi: api.Family_SAFI_UNICAST})
		}
	}
	return out
}

// globalFamilies are the unicast families of p's session as GoBGP's
// global configuration numbers them.
func globalFamilies(p Peer) []uint32 {
	var out []uint32
	for _, is4 := range peerIs4(p) {
		t := oc.AFI_SAFI_TYPE_IPV6_UNICAST
		if is4 {
			t = oc.AFI_SAFI_TYPE_IPV4_UNICAST
		}
		out = append(out, uint32(oc.AfiSafiTypeToIntMap[t])) //nolint:gosec // GoBGP's small enumeration
	}
	return out
}
