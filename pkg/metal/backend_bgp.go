package metal

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/bgp"
	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/nodes"
)

// ErrNoRouterID is returned when bgp.routerID is unset and no IPv4 peer gives one.
var ErrNoRouterID = errors.New("bgp.routerID is not set and there is no IPv4 peer to derive it from")

// bgpBackend announces over BGP with the embedded speaker (pkg/bgp): every
// address with the nodes as ADD-PATH next hops. It is built when the config
// has BGP peers.
type bgpBackend struct {
	*bgp.Speaker
}

func newBGPBackend(cfg *config.CloudConfig) (backend, error) {
	// With announceFrom Nodes the node agents announce (cmd/metal-node-agent);
	// the replicas only allocate.
	if !cfg.BGP.FromReplicas() {
		return nil, nil
	}
	bcfg, err := speakerConfig(&cfg.BGP, &cfg.Routes)
	if err != nil {
		return nil, fmt.Errorf("start BGP speaker: %w", err)
	}
	bcfg.Policy = bgp.PolicyFrom(&cfg.LoadBalancer)
	speaker, err := bgp.New(bcfg)
	if err != nil {
		return nil, fmt.Errorf("start BGP speaker: %w", err)
	}
	return &bgpBackend{Speaker: speaker}, nil
}

func (b *bgpBackend) Name() string { return "bgp" }

// Run starts the speaker. Its sessions must outlive ctx (routers keep the
// routes of a replica that exits without closing them): only Stop ends them.
func (b *bgpBackend) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("bgp")
	go func() {
		if err := b.Start(klog.NewContext(context.WithoutCancel(ctx), logger)); err != nil {
			logger.Error(err, "BGP speaker stopped")
		}
	}()
	return nil
}

// Stop ends the sessions as bgp.onStop says. Withdrawing closes them with a
// Cease and returns once that is sent; keeping leaves them open, to close
// with the process without a NOTIFICATION, which a router with graceful
// restart treats as a restart: it keeps forwarding on this replica's paths
// until the replica is back or the restart time ends.
func (b *bgpBackend) Stop(ctx context.Context, cfg *config.CloudConfig, othersRun func() bool) {
	logger := klog.FromContext(ctx).WithName("bgp")
	mode := cfg.BGP.OnStop
	others := mode == config.StopAuto && othersRun()
	if mode == config.StopWithdraw || others {
		logger.Info("Closing the BGP sessions: routers drop this replica's paths now", "onStop", mode, "otherReplicas", others)
		b.Speaker.Stop()
		return
	}
	logger.Info("Leaving the BGP sessions to close with the process: routers with graceful restart keep this replica's paths until it is back",
		"onStop", mode, "otherReplicas", others)
}

// Collect reports the sessions and the announced prefixes.
func (b *bgpBackend) Collect(ch chan<- metrics.Metric) {
	for _, p := range b.PeerStates() {
		up := 0.0
		if p.Established() {
			up = 1
		}
		ch <- metrics.NewLazyConstMetric(descSession, metrics.GaugeValue, up, p.Address.String(), p.State)
	}
	ch <- metrics.NewLazyConstMetric(descPrefixes, metrics.GaugeValue, float64(b.PrefixCount()))
}

// speakerConfig is the speaker's config from the bgp and routes sections,
// whose values the config's validation parsed. Only the password files are
// read here.
func speakerConfig(b *config.BGP, r *config.Routes) (bgp.Config, error) {
	out := bgp.Config{ASN: b.ASN}
	for i := range b.Peers {
		p := &b.Peers[i]
		peer, err := bgp.PeerFrom(p, i, r)
		if err != nil {
			return bgp.Config{}, err
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
		return bgp.Config{}, err
	}
	out.RouterID = id
	return out, nil
}

// routerIDFor is the source address toward the first IPv4 peer: the local
// address toward it (nodes.SourceToward: no packet is sent).
func routerIDFor(peers []bgp.Peer) (netip.Addr, error) {
	for _, p := range peers {
		if !p.Address.Is4() {
			continue
		}
		if p.LocalAddress.IsValid() {
			return p.LocalAddress, nil
		}
		local, err := nodes.SourceToward(netip.AddrPortFrom(p.Address, p.Port))
		if err != nil {
			return netip.Addr{}, fmt.Errorf("derive BGP router ID: %w", err)
		}
		return local, nil
	}
	return netip.Addr{}, ErrNoRouterID
}
