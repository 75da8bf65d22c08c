package bgp

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/announcer"
	speaker "github.com/metal-ccm/metal-ccm/pkg/bgp"
	"github.com/metal-ccm/metal-ccm/pkg/bgp/routerid"
	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/nodes"
	"github.com/metal-ccm/metal-ccm/pkg/protocol"
	"github.com/metal-ccm/metal-ccm/pkg/svcstatus"
)

// ErrNoRouterID is returned when bgp.routerID is unset and no peer gives one.
var ErrNoRouterID = errors.New("bgp.routerID is not set and there is no peer to derive it from")

// sessionPoll is how often a replica looks at its sessions for the
// Services' status.
const sessionPoll = 2 * time.Second

// replica is BGP in a replica: with announceFrom Replicas, the speaker and
// the announcer of every address with its nodes as next hops; with
// announceFrom Nodes, an announcer that sends nothing and only tells which
// nodes' agents announce what (each agent checks its own node's health).
type replica struct {
	speaker *speaker.Speaker // nil with announceFrom Nodes
	ann     *announcer.Announcer
	paths   *announcer.Recorder
	up      atomic.Pointer[map[string]bool] // established sessions by peer name, as last polled
	changed chan struct{}
}

// Replica builds BGP's part of a replica when the config has peers.
func (Protocol) Replica(cfg *config.CloudConfig, env protocol.ReplicaEnv) (protocol.Replica, error) {
	r := &replica{changed: make(chan struct{}, 1)}
	switch {
	case cfg.BGP.FromReplicas():
		bcfg, err := speakerConfig(&cfg.BGP, &cfg.Routes)
		if err != nil {
			return nil, fmt.Errorf("start BGP speaker: %w", err)
		}
		bcfg.Policy = PolicyFrom(&cfg.LoadBalancer)
		if r.speaker, err = speaker.New(bcfg); err != nil {
			return nil, fmt.Errorf("start BGP speaker: %w", err)
		}
		r.paths = announcer.Record(r.speaker)
		r.ann = announcer.New(env.Informers, r.paths, env.Wants, announcer.Options{
			Addresses:    env.Addresses,
			InPools:      env.InPools,
			PodRoutes:    cfg.Routes.Enabled,
			PodNextHop:   cfg.Routes.NextHopAddressType,
			MaxNextHops:  cfg.BGP.MaxPathsPerAddress,
			HealthChecks: env.HealthChecks(),
			Communities:  AnnouncedCommunities(&cfg.LoadBalancer),
			Weighted:     WeightedECMP(&cfg.LoadBalancer),
		})
		env.PodRoutes(r.ann)
	case cfg.BGP.FromNodes():
		if cfg.Routes.Enabled {
			env.PodRoutesFromAgents()
		}
		r.paths = announcer.Record(nil)
		r.ann = announcer.New(env.Informers, r.paths, env.Wants, announcer.Options{MaxNextHops: announcer.MaxNextHops, Addresses: env.Addresses, InPools: env.InPools})
	default:
		return nil, nil
	}
	return r, nil
}

// Start starts the speaker once the announcer has synced (startAfterSync).
// Its sessions must outlive ctx (routers keep the routes of a replica that
// exits without closing them): only Stop ends them.
func (r *replica) Start(ctx context.Context) error {
	if r.speaker == nil {
		return nil
	}
	go startAfterSync(ctx, r.speaker, r.ann, klog.FromContext(ctx).WithName("bgp"))
	return nil
}

// Run runs the announcer, and polls the sessions for the status, until
// ctx ends.
func (r *replica) Run(ctx context.Context) {
	go r.ann.Run(ctx)
	poll := time.NewTicker(sessionPoll)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.paths.Changed():
		case <-poll.C:
			up := r.sessionsUp()
			if old := r.up.Load(); old != nil && maps.Equal(*old, up) {
				continue
			}
			r.up.Store(&up)
		}
		select {
		case r.changed <- struct{}{}:
		default:
		}
	}
}

// sessionsUp are the names of the peers whose session is established.
func (r *replica) sessionsUp() map[string]bool {
	up := map[string]bool{}
	if r.speaker != nil {
		for _, p := range r.speaker.PeerStates() {
			if p.Established() {
				up[p.Name] = true
			}
		}
	}
	return up
}

// Stop ends the sessions as bgp.onStop says. Withdrawing closes them with a
// Cease and returns once that is sent; keeping leaves them open, to close
// with the process without a NOTIFICATION, which a router with graceful
// restart treats as a restart: it keeps forwarding on this replica's paths
// until the replica is back or the restart time ends.
func (r *replica) Stop(ctx context.Context, cfg *config.CloudConfig, othersRun func() bool) {
	if r.speaker == nil {
		return
	}
	logger := klog.FromContext(ctx).WithName("bgp")
	mode := cfg.BGP.OnStop
	others := mode == config.StopAuto && othersRun()
	if mode == config.StopWithdraw || others {
		logger.Info("Closing the BGP sessions: routers drop this replica's paths now", "onStop", mode, "otherReplicas", others)
		r.speaker.Stop()
		return
	}
	logger.Info("Leaving the BGP sessions to close with the process: routers with graceful restart keep this replica's paths until it is back",
		"onStop", mode, "otherReplicas", others)
}

// Lead: the leader writes nothing of BGP's own.
func (r *replica) Lead(context.Context, protocol.LeaderEnv) {}

// Announcement is what is known of addr over BGP; ok is false while the
// announcer has not synced.
func (r *replica) Announcement(addr netip.Addr, names map[netip.Addr]string) (svcstatus.Announcement, bool) {
	a := svcstatus.Announcement{Addr: addr, Protocol: svcstatus.BGP}
	if r.speaker == nil {
		a.Protocol = svcstatus.BGPFromNodes
	}
	if !r.ann.Synced() {
		return a, false
	}
	prefix := netip.PrefixFrom(addr, addr.BitLen())
	for _, hop := range r.paths.NextHops(prefix) {
		if name, ok := names[hop]; ok {
			a.Nodes = append(a.Nodes, name)
		} else {
			a.Nodes = append(a.Nodes, hop.String())
		}
	}
	slices.Sort(a.Nodes)
	if r.speaker != nil {
		up := r.up.Load()
		if up == nil {
			// Not polled yet.
			now := r.sessionsUp()
			up = &now
		}
		a.Peers = r.speaker.SentTo(prefix)
		for _, p := range a.Peers {
			if (*up)[p] {
				a.PeersUp = append(a.PeersUp, p)
			}
		}
	}
	return a, true
}

func (r *replica) Changed() <-chan struct{} { return r.changed }
func (r *replica) OutsidePools() int        { return r.ann.OutsidePools() }
func (r *replica) Resync()                  { r.ann.Resync() }

// Collect reports the sessions and the announced prefixes.
func (r *replica) Collect(ch chan<- metrics.Metric) {
	if r.speaker != nil {
		collectReplica(r.speaker, ch)
	}
}

// speakerConfig is the replicas' speaker from the bgp and routes sections,
// whose values the config's validation parsed. Only the password files are
// read here.
func speakerConfig(b *config.BGP, rt *config.Routes) (speaker.Config, error) {
	out := speaker.Config{ASN: b.ASN}
	for i := range b.Peers {
		p := &b.Peers[i]
		peer, err := PeerFrom(p, i, rt)
		if err != nil {
			return speaker.Config{}, err
		}
		peer.LocalAddress = p.LocalAddr()
		out.Peers = append(out.Peers, peer)
	}
	if id := b.RouterIDAddr(); id.IsValid() {
		out.RouterID = id
		return out, nil
	}
	id, err := routerIDFor(out.Peers)
	if err != nil {
		return speaker.Config{}, err
	}
	out.RouterID = id
	return out, nil
}

// routerIDFor is the source address toward the first IPv4 peer (its
// configured local address, else nodes.SourceToward: no packet is sent);
// with IPv6 peers only, the one toward the first of them, as
// routerid.FromIPv6 folds it.
func routerIDFor(peers []speaker.Peer) (netip.Addr, error) {
	for _, v4 := range []bool{true, false} {
		for _, p := range peers {
			if p.Interface != "" || p.Address.Is4() != v4 {
				continue // a link-local session gives no address to use
			}
			if p.LocalAddress.IsValid() {
				return routerid.For(p.LocalAddress), nil
			}
			local, err := nodes.SourceToward(netip.AddrPortFrom(p.Address, p.Port))
			if err != nil {
				return netip.Addr{}, fmt.Errorf("derive BGP router ID: %w", err)
			}
			return routerid.For(local), nil
		}
	}
	return netip.Addr{}, ErrNoRouterID
}
