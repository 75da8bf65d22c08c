package bgp

import (
	"context"
	"fmt"

	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/announcer"
	speaker "github.com/metal-ccm/metal-ccm/pkg/bgp"
	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/healthcheck"
	"github.com/metal-ccm/metal-ccm/pkg/protocol"
)

// agent is BGP in a node agent (announceFrom Nodes): the node's speaker
// and the announcer of the addresses its node carries, itself as next hop.
// Its sessions outlive Run: Stop ends them with a Cease when the node
// stops serving, and otherwise leaves them to close with the process,
// without a NOTIFICATION, so that routers with graceful restart keep the
// node's paths through the replacement of its agent (a rolling update).
type agent struct {
	speaker  *speaker.Speaker
	ann      *announcer.Announcer
	node     string
	podRoute bool
}

// OnNodes: with announceFrom Nodes and peers.
func (Protocol) OnNodes(cfg *config.CloudConfig) bool { return cfg.BGP.FromNodes() }

// Agent builds BGP's part of the node agent with announceFrom Nodes.
func (Protocol) Agent(ctx context.Context, cfg *config.CloudConfig, env protocol.AgentEnv) (protocol.Agent, error) {
	if !(Protocol{}).OnNodes(cfg) {
		return nil, nil
	}
	logger := klog.FromContext(ctx)
	bcfg, err := agentSpeakerConfig(cfg, env.Node)
	if err != nil {
		return nil, err
	}
	if len(bcfg.Peers) == 0 {
		logger.Info("No BGP peer selects this node (bgp.peers[].nodeSelector): nothing is announced from it")
	}
	sp, err := speaker.New(bcfg)
	if err != nil {
		return nil, fmt.Errorf("BGP speaker: %w", err)
	}
	opts := announcer.Options{OnlyNode: env.Node.Name, Addresses: env.Addresses(config.ProtocolBGP), InPools: env.InPools, PodRoutes: cfg.Routes.Enabled,
		PodNextHop: cfg.Routes.NextHopAddressType, MaxNextHops: 1, Communities: AnnouncedCommunities(&cfg.LoadBalancer),
		Weighted: WeightedECMP(&cfg.LoadBalancer)}
	if hc, on := healthcheck.FromConfig(cfg.HealthChecks); on {
		hc.HTTPInterval = 0 // its own node: a ping tells nothing
		opts.HealthChecks = &announcer.HealthChecks{Options: hc, ProxyPort: cfg.HealthChecks.Port}
	}
	a := &agent{speaker: sp, ann: announcer.New(env.Informers, sp, env.Wants, opts), node: env.Node.Name, podRoute: cfg.Routes.Enabled}
	logger.Info("Announcing this node's LoadBalancer addresses over BGP", "asn", bcfg.ASN, "routerID", bcfg.RouterID, "peers", len(bcfg.Peers),
		"podRoutes", cfg.Routes.Enabled)
	return a, nil
}

func (a *agent) Run(ctx context.Context) {
	go startAfterSync(ctx, a.speaker, a.ann, klog.FromContext(ctx).WithName("bgp"))
	a.ann.Run(ctx)
}

// Ready: the first sync is done and, with routes.enabled, every pod CIDR of
// the node that has a next hop is in the speaker. The CCM's route
// controller counts a node's pod routes as created while its agent's pod is
// Ready: the kubelet carries the state, so the agent needs no write access
// for it.
func (a *agent) Ready() error {
	if !a.ann.Synced() {
		return protocol.ErrStarting
	}
	if !a.podRoute {
		return nil
	}
	if missing := a.ann.MissingPodRoutes(a.node); len(missing) > 0 {
		return fmt.Errorf("%w: %v", protocol.ErrPodRoutesMissing, missing)
	}
	return nil
}

func (a *agent) OutsidePools() int { return a.ann.OutsidePools() }

// Resync looks at every Service again, under the pools of the moment.
func (a *agent) Resync() { a.ann.Resync() }

func (a *agent) Collect(ch chan<- metrics.Metric) { collectAgent(a.speaker, ch) }

// Stop closes the sessions with a Cease when the node leaves (the routers
// drop its paths at once), and returns once it is sent; else it leaves
// them to the process's exit.
func (a *agent) Stop(_ context.Context, leave bool) {
	if leave {
		a.speaker.Stop()
	}
}
