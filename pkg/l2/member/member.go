package member

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-multierror"
	"github.com/hashicorp/memberlist"
	"k8s.io/klog/v2"
)

// DefaultPort is the membership's TCP and UDP port on each node.
const DefaultPort = 7946

// label marks every packet and stream of this membership, so that another
// memberlist cluster on the same port (MetalLB's speakers also default to
// 7946) is never merged into it.
const label = "metal-ccm/l2"

// leaveTimeout bounds the goodbye broadcast when Start's context ends.
const leaveTimeout = time.Second

// Config is one member's part in the membership.
type Config struct {
	// Name is the member's name, its node's name: the names HasQuorum counts
	// and Alive returns.
	Name string
	// Addresses are the node's InternalIPs, carried in the member's metadata
	// so that the others know which node answers without asking the API
	// server.
	Addresses []netip.Addr
	// Bind is where the membership listens (TCP and UDP) and what it tells
	// the others to reach it at: the node's InternalIP and DefaultPort. Port
	// 0 picks a free port (tests).
	Bind netip.AddrPort
	// Keys, when set, encrypt and authenticate all gossip with AES (16, 24
	// or 32 bytes each): the first encrypts what this member sends, any of
	// them is accepted. A member that shares no key cannot join.
	Keys [][]byte
	// Observer joins and watches but is never counted nor chosen (the CCM).
	Observer bool
	// Timing is how fast members are declared dead; zero fields take
	// DefaultTiming's.
	Timing Timing
	// Fitness is what the agent says of its node at the start (the zero
	// value: not fit until SetFitness says so).
	Fitness Fitness
}

// Member is an agent alive in the membership.
type Member struct {
	Name      string
	Addresses []netip.Addr // the addresses it claims (its metadata)
	// From is the address the membership reaches it at (it answers the
	// probes there): unlike the claims, a member cannot choose it freely.
	From netip.Addr
	// Fitness is what it says of its node's ability to carry addresses.
	Fitness Fitness
}

// Members is this node's view of the membership.
type Members struct {
	ml      *memberlist.Memberlist
	meta    *metaDelegate
	role    role
	addrs   []netip.Addr
	logger  klog.Logger
	self    netip.AddrPort
	name    string
	changed chan struct{}
	// joined is told, coalesced, when another member joins (reannounce);
	// reannounced counts the announcements it made.
	joined      chan struct{}
	reannounced atomic.Int64
	// local is the metadata memberlist holds for this member, as its events
	// last told (SetFitness checks that an update was taken).
	local atomic.Pointer[[]byte]
	// cut: this agent reaches none of the others (watchReach).
	cut atomic.Bool

	mu   sync.Mutex // orders Leave and Shutdown: memberlist panics on Leave after Shutdown
	down bool
	done chan struct{}
}

// Start joins no one yet (see Join) but listens, and runs until ctx ends,
// when it says goodbye (so the others drop it at once instead of after the
// suspicion timeout) and shuts down.
func Start(ctx context.Context, cfg Config) (*Members, error) {
	if cfg.Name == "" {
		return nil, errors.New("member: no name")
	}
	if !cfg.Bind.IsValid() {
		return nil, fmt.Errorf("member %s: no address to bind", cfg.Name)
	}
	r := roleAgent
	if cfg.Observer {
		r = roleObserver
	}
	md, err := meta{role: r, addresses: cfg.Addresses, fitness: cfg.Fitness}.encode()
	if err != nil {
		return nil, fmt.Errorf("member %s: metadata: %w", cfg.Name, err)
	}
	var keyring *memberlist.Keyring
	if len(cfg.Keys) > 0 {
		if keyring, err = memberlist.NewKeyring(cfg.Keys, cfg.Keys[0]); err != nil {
			return nil, fmt.Errorf("member %s: keys: %w", cfg.Name, err)
		}
	}
	m := &Members{
		meta:    newMetaDelegate(md),
		role:    r,
		addrs:   slices.Clone(cfg.Addresses),
		name:    cfg.Name,
		logger:  klog.FromContext(ctx).WithName("member"),
		changed: make(chan struct{}, 1),
		joined:  make(chan struct{}, 1),
		done:    make(chan struct{}),
	}

	c := memberlist.DefaultLANConfig()
	c.Name = cfg.Name
	c.BindAddr = cfg.Bind.Addr().String()
	c.BindPort = int(cfg.Bind.Port())
	c.AdvertiseAddr = c.BindAddr
	c.AdvertisePort = c.BindPort
	c.Label = label
	c.Keyring = keyring
	cfg.Timing.apply(c)
	// A node re-addressed under the same name takes its old entry over as
	// soon as that is dead, instead of being refused as a conflict until
	// memberlist forgets the old one.
	c.DeadNodeReclaimTime = time.Second
	c.Delegate = m.meta
	c.Events = events{m}
	c.Logger = newLogger(m.logger)

	ml, err := memberlist.Create(c)
	if err != nil {
		return nil, fmt.Errorf("member %s: %w", cfg.Name, err)
	}
	m.ml = ml
	// With port 0, memberlist has put the port it got into c.
	m.self = netip.AddrPortFrom(cfg.Bind.Addr(), uint16(c.BindPort)) //nolint:gosec // a port memberlist bound
	if !cfg.Observer {
		go m.watchReach(c.ProbeInterval, cfg.Timing.isolation())
		go m.reannounce(ctx)
	}
	m.logger.V(2).Info("Membership started", "name", cfg.Name, "bind", m.self, "observer", cfg.Observer, "keys", len(cfg.Keys))
	go func() {
		select {
		case <-ctx.Done():
			if err := m.Leave(leaveTimeout); err != nil {
				m.logger.V(2).Info("Leaving the membership", "err", err)
			}
			m.Shutdown()
		case <-m.done:
		}
	}()
	return m, nil
}

// LocalAddr is where this member listens.
func (m *Members) LocalAddr() netip.AddrPort { return m.self }

// Join contacts the seeds (the other nodes' InternalIP:port) that this
// member does not know alive, which merges the memberships. Call it
// whenever the node list changes: known members are skipped, so a call that
// brings nothing new costs nothing, and one member reached is enough since
// gossip does the rest. Seeds that cannot be reached (a node without a
// running agent, or powered off) are tried at once in parallel; the error
// names them and is worth a log line, not a retry loop: when such an agent
// comes up it joins this one.
func (m *Members) Join(seeds []netip.AddrPort) error {
	known := map[netip.AddrPort]bool{m.self: true}
	for _, n := range m.ml.Members() {
		if a, ok := netip.AddrFromSlice(n.Addr); ok {
			known[netip.AddrPortFrom(a.Unmap(), n.Port)] = true
		}
	}
	var todo []string
	for _, s := range seeds {
		s = netip.AddrPortFrom(s.Addr().Unmap(), s.Port())
		if !known[s] {
			known[s] = true
			todo = append(todo, s.String())
		}
	}
	if len(todo) == 0 {
		return nil
	}
	// One seed per call: memberlist tries a list one after the other, and
	// each seed that does not answer would cost a TCP timeout.
	errs := make([]error, len(todo))
	var wg sync.WaitGroup
	for i, s := range todo {
		wg.Go(func() {
			if _, err := m.ml.Join([]string{s}); err != nil {
				// memberlist's list of one error, which names the seed.
				if me := (*multierror.Error)(nil); errors.As(err, &me) && len(me.Errors) == 1 {
					err = me.Errors[0]
				}
				errs[i] = err
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("member: joining %d new seeds: %w", len(todo), err)
	}
	return nil
}

// Alive is the agents in the membership (observers left out), this one
// included, sorted by name; only this one while it is cut off (CutOff).
//
// A suspect member is still alive here: it is gone only once memberlist
// declares it dead. Dropping suspects would fail addresses over sooner, but
// on every missed probe of a busy node too, which moves addresses back and
// forth and, with members seeing different suspects, can make two agents
// answer for one address; the suspicion timeout is what gives a member
// that is alive the time to refute, so it is counted until then.
func (m *Members) Alive() []Member {
	var out []Member
	cut, self := m.cut.Load(), m.ml.LocalNode().Name
	for _, n := range m.ml.Members() { // alive and suspect, not dead nor left
		if cut && n.Name != self {
			continue
		}
		md, err := decodeMeta(n.Meta)
		if err != nil {
			// Not counted: a member this one cannot read is safer left out
			// of a majority than guessed into one.
			m.logger.V(4).Info("Member with unreadable metadata", "name", n.Name, "err", err)
			continue
		}
		if md.role != roleAgent {
			continue
		}
		from, _ := netip.AddrFromSlice(n.Addr)
		out = append(out, Member{Name: n.Name, Addresses: md.addresses, From: from.Unmap(), Fitness: md.fitness})
	}
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// SetFitness changes what this member says of its node and gossips it,
// waiting at most timeout for the news to go out. The others (and this
// member's own Alive) see it with the member's next state: the same
// gossip that carries liveness.
//
// Memberlist drops an update whose incarnation a refutation overtook
// between the two (frequent just after a restart, when the others still
// gossip the member's old incarnation): its own state keeps the old
// metadata, which every later round would gossip. So the update is tried
// again until memberlist's state carries it; once it does, a broadcast not
// out within timeout goes out with the next rounds.
func (m *Members) SetFitness(f Fitness, timeout time.Duration) error {
	md, err := meta{role: m.role, addresses: m.addrs, fitness: f}.encode()
	if err != nil {
		return fmt.Errorf("member: metadata: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return errors.New("member: fitness after shutdown")
	}
	m.meta.set(md)
	for range updateTries {
		err = m.ml.UpdateNode(timeout)
		if l := m.local.Load(); l != nil && bytes.Equal(*l, md) {
			return nil
		}
	}
	if err == nil {
		err = errors.New("dropped by memberlist")
	}
	return fmt.Errorf("member: gossip fitness: not taken after %d tries: %w", updateTries, err)
}

// updateTries bounds SetFitness's tries: each loses only to a refutation
// that came in between, and a caller that gets the error tries again.
const updateTries = 3

// Names is the names of the members, in their order.
func Names(members []Member) []string {
	out := make([]string, len(members))
	for i, mb := range members {
		out[i] = mb.Name
	}
	return out
}

// Changed receives after members join, leave, die or change their metadata,
// and when this one is cut off or reaches the others again; notifications
// coalesce, so read Alive after each.
func (m *Members) Changed() <-chan struct{} { return m.changed }

// notify tells Changed, without blocking.
func (m *Members) notify() {
	select {
	case m.changed <- struct{}{}:
	default:
	}
}

// Leave tells the others this member is going, so that they drop it at once,
// waiting at most timeout for the message to go out. It keeps listening
// until Shutdown.
func (m *Members) Leave(timeout time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return errors.New("member: leave after shutdown")
	}
	if err := m.ml.Leave(timeout); err != nil {
		return fmt.Errorf("member: leave: %w", err)
	}
	return nil
}

// Shutdown stops this member without a goodbye: to the others it is as if
// it crashed. Safe to call more than once.
func (m *Members) Shutdown() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return
	}
	m.down = true
	close(m.done)
	if err := m.ml.Shutdown(); err != nil {
		m.logger.V(2).Info("Shutting the membership down", "err", err)
	}
}
