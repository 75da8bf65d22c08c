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
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/community"
)

// connectRetry is how long a speaker waits before it dials again a peer
// whose session failed or ended (the first dial is at once).
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
	// peers, while running, has the session of each peer (by index in
	// cfg.Peers), each sending from the paths above: the speaker keeps
	// every path once, whatever the number of peers.
	peers []*peerRun
	// gens count, by host prefix, the changes of its paths' attributes
	// (SetCommunities, SetWeights): a peer whose router has the paths of
	// another generation is sent them all again.
	gens map[netip.Prefix]uint32
	// bfd, while running, has the peers' BFD sessions.
	bfd     *bfdSessions
	started bool
	// closing is set when Start stops the sessions: a peer on an interface
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
		cfg:     c,
		paths:   map[netip.Prefix]prefixPaths{},
		extra:   map[netip.Prefix]community.Set{},
		weights: map[netip.Prefix]map[netip.Addr]int{},
		gens:    map[netip.Prefix]uint32{},
		aggs:    make([]map[netip.Prefix]*aggregate, len(c.Peers)),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}, nil
}

// Start runs the speaker until ctx ends or Stop is called; it then closes the
// sessions with a Cease notification, so the routers withdraw the speaker's
// routes at once, and returns nil. It never listens for connections, so it
// needs no privileges. Each session sends every path the speaker has once
// established, then its End-of-RIB, and with graceful restart every start
// is announced as a restart:
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
	runCtx, stopPeers := context.WithCancel(context.WithoutCancel(ctx))
	peers := s.startPeers(runCtx, watchCtx, logger)
	logger.Info("BGP speaker started", "asn", s.cfg.ASN, "routerID", s.cfg.RouterID, "peers", len(s.cfg.Peers))

	select {
	case <-ctx.Done():
	case <-s.stop:
	}
	s.mu.Lock()
	sessions := s.bfd.sessions()
	s.peers, s.bfd, s.closing = nil, nil, true
	s.mu.Unlock()
	// Each session ends with a Cease, so the routers withdraw the
	// speaker's routes at once.
	for _, r := range peers {
		r.mu.Lock()
		r.cease = true
		r.mu.Unlock()
	}
	stopPeers()
	for _, r := range peers {
		<-r.done
	}
	// After the Ceases, once the routers have closed their BGP sessions:
	// the BFD sessions end with AdminDown (waitRouterDown).
	waitRouterDown(sessions, routerDownWait)
	stopBFD()
	bfdRunning.wg.Wait()
	logger.Info("BGP speaker stopped")
	return nil
}

// startPeers starts the session of each peer: a peer on an interface
// once its router is found there (followRouter), with its BFD session.
func (s *Speaker) startPeers(ctx, watchCtx context.Context, logger logr.Logger) []*peerRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	peers := make([]*peerRun, len(s.cfg.Peers))
	for i, p := range s.cfg.Peers {
		if p.Interface != "" {
			// Before the session: a router that learns its unnumbered
			// neighbours from Router Advertisements refuses it until then.
			go advertiseSelf(watchCtx, logger, p.Interface)
		}
		nb, err := p.neighbor()
		r := newPeerRun(s, i, logger, nb)
		peers[i] = r
		go r.run(ctx)
		if err != nil {
			// The router may not have advertised itself yet: the
			// session starts once it has.
			logger.Info("BGP peer's router not found on its link yet: looking again", "peer", p.Name, "interface", p.Interface, "err", err)
			go s.followRouter(watchCtx, logger, r, i, netip.Addr{})
			continue
		}
		s.runBFD(i, r, nb)
		if p.Interface != "" {
			go s.followRouter(watchCtx, logger, r, i, nb)
		}
	}
	s.peers = peers
	return peers
}

// mark has every running peer look at prefix again. The caller holds s.mu.
func (s *Speaker) mark(prefix netip.Prefix) {
	for _, r := range s.peers {
		r.out.mark(prefix)
	}
}

// neighbor is the router's address as the session dials it: Address, or for a
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
func (s *Speaker) SetPaths(ctx context.Context, prefix netip.Prefix, nextHops []netip.Addr) error {
	hops, err := checkPaths(prefix, nextHops)
	if err != nil {
		return fmt.Errorf("bgp set paths: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.paths[prefix].paths()
	var added, withdrawn int
	// The aggregates whose next hops changed are synced last: they follow
	// cur.
	var aggsChanged []aggKey
	defer func() {
		for _, k := range aggsChanged {
			s.syncAggregate(k)
		}
	}()
	// cur is stored before the aggregates are synced (deferred calls run
	// last first).
	defer func() {
		if len(cur) == 0 {
			delete(s.paths, prefix)
		} else {
			s.paths[prefix] = keep(cur, hops)
		}
	}()
	// The peers' senders send what changed: new paths first, then the
	// withdrawals.
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
		s.mark(prefix)
	}
	if added+withdrawn > 0 {
		klog.FromContext(ctx).V(2).Info("BGP paths changed", "prefix", prefix, "nextHops", hops,
			"added", added, "withdrawn", withdrawn, "running", s.peers != nil)
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
	s.gens[prefix]++
	s.mark(prefix)
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
	peers, sessions := s.peers, s.bfd.sessions()
	s.mu.Unlock()
	out := make([]PeerState, len(s.cfg.Peers))
	for i, p := range s.cfg.Peers {
		st := PeerState{Address: p.Address, State: "idle"}
		if i < len(peers) {
			st = peers[i].peerState()
			if !st.Address.IsValid() {
				st.Address = p.Address
			}
		}
		st.Name, st.Interface = p.Name, p.Interface
		if i < len(sessions) {
			st.BFD = bfdState(sessions[i])
		}
		out[i] = st
	}
	return out
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
