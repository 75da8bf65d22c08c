package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/announcer"
	"github.com/metal-ccm/metal-ccm/pkg/bgp"
	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/healthcheck"
	"github.com/metal-ccm/metal-ccm/pkg/nodes"
)

// ErrNotNodes is returned by Run when the agent has nothing to do: the
// replicas announce over BGP (bgp.announceFrom Replicas, or no peers) and no
// pool is announced with L2.
var ErrNotNodes = errors.New("bgp.announceFrom is not Nodes (or there are no bgp.peers) and no pool is announced with L2: nothing to announce from this node")

// nodeWait bounds how long the agent waits for its Node to have an IPv4
// InternalIP (a new node registers after its agent's pod may start).
const nodeWait = 5 * time.Minute

// Agent announces its node's LoadBalancer addresses.
type Agent struct {
	Config   *config.CloudConfig
	Client   *Client
	NodeName string

	speaker *bgp.Speaker
	ann     atomic.Pointer[announcer.Announcer] // BGP; set once Run has built it
	l2ann   atomic.Pointer[announcer.Announcer] // L2; set once Run has built it
	l2      atomic.Pointer[l2]
	idle    atomic.Bool // Run found nothing to announce
}

// Run announces until ctx ends: over BGP with announceFrom Nodes, and with
// L2 for the pools announced so. The BGP sessions are left to close with
// the process, without a NOTIFICATION: routers with graceful restart keep
// the node's paths through a restart of its agent (a rolling update), and
// drop them after the restart time otherwise.
func (a *Agent) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithValues("node", a.NodeName)
	ctx = klog.NewContext(ctx, logger)
	cfg := a.Config
	bgpOn := cfg.BGP.FromNodes()
	l2On := cfg.LoadBalancer.HasProtocol(config.ProtocolL2)
	if !bgpOn && !l2On {
		a.idle.Store(true)
		return ErrNotNodes
	}
	node, err := a.waitNode(ctx)
	if err != nil {
		return err
	}
	inf := a.Client.informers()
	var runs []func(context.Context)
	if bgpOn {
		ann, err := a.startBGP(ctx, node, inf)
		if err != nil {
			return err
		}
		runs = append(runs, ann.Run)
	}
	if l2On {
		run, err := a.startL2(ctx, node, inf)
		if err != nil {
			return err
		}
		runs = append(runs, run)
	}
	stopped := runInformers(ctx, inf)
	var wg sync.WaitGroup
	for _, run := range runs {
		wg.Go(func() { run(ctx) })
	}
	wg.Wait()
	stopped.Wait()
	return nil
}

// startBGP starts the node's BGP speaker and the announcer of the addresses
// its node carries (pools announced with BGP), with itself as next hop.
func (a *Agent) startBGP(ctx context.Context, node *v1.Node, inf announcer.Informers) (*announcer.Announcer, error) {
	logger := klog.FromContext(ctx)
	cfg := a.Config
	bcfg, err := speakerConfig(cfg, node)
	if err != nil {
		return nil, err
	}
	if len(bcfg.Peers) == 0 {
		logger.Info("No BGP peer selects this node (bgp.peers[].nodeSelector): nothing is announced from it")
	}
	a.speaker, err = bgp.New(bcfg)
	if err != nil {
		return nil, fmt.Errorf("BGP speaker: %w", err)
	}
	go func() {
		if err := a.speaker.Start(klog.NewContext(context.WithoutCancel(ctx), logger.WithName("bgp"))); err != nil {
			logger.Error(err, "BGP speaker stopped")
		}
	}()
	opts := announcer.Options{OnlyNode: a.NodeName, Addresses: cfg.LoadBalancer.Announcer(config.ProtocolBGP), PodRoutes: cfg.Routes.Enabled, PodNextHop: cfg.Routes.NextHopAddressType, MaxNextHops: 1,
		Communities: bgp.AnnouncedCommunities(&cfg.LoadBalancer)}
	if hc, on := healthcheck.FromConfig(cfg.HealthChecks); on {
		opts.HealthChecks = &announcer.HealthChecks{Options: hc, ProxyPort: cfg.HealthChecks.Port}
	}
	ann := announcer.New(inf, a.speaker, cfg.LoadBalancer.Rule().Wants, opts)
	a.ann.Store(ann)
	logger.Info("Announcing this node's LoadBalancer addresses over BGP", "asn", bcfg.ASN, "routerID", bcfg.RouterID, "peers", len(bcfg.Peers),
		"podRoutes", cfg.Routes.Enabled)
	return ann, nil
}

// waitNode waits until the agent's Node exists with an IPv4 InternalIP.
func (a *Agent) waitNode(ctx context.Context) (*v1.Node, error) {
	var node *v1.Node
	err := wait.PollUntilContextTimeout(ctx, time.Second, nodeWait, true, func(ctx context.Context) (bool, error) {
		n := &v1.Node{}
		if err := a.Client.Nodes.Get(ctx, a.NodeName, n); err != nil {
			klog.FromContext(ctx).V(2).Info("Waiting for the node", "node", a.NodeName, "err", err)
			return false, nil
		}
		node = n
		_, ok := nodes.InternalIP(n, true)
		return ok, nil
	})
	if err != nil {
		if node != nil {
			return nil, fmt.Errorf("node %s: %w", a.NodeName, ErrNoIPv4)
		}
		return nil, fmt.Errorf("node %s not found: %w", a.NodeName, err)
	}
	return node, nil
}

// Sessions are the BGP sessions' states (for /metrics and /healthz).
func (a *Agent) Sessions() []bgp.PeerState {
	if a.speaker == nil {
		return nil
	}
	return a.speaker.PeerStates()
}

// Prefixes is how many prefixes the agent announces.
func (a *Agent) Prefixes() int {
	if a.speaker == nil {
		return 0
	}
	return a.speaker.PrefixCount()
}

// OutsidePools is how many addresses of the Services' status the agent's
// announcers (BGP, L2) leave out now: in no pool their protocol announces.
func (a *Agent) OutsidePools() int {
	n := 0
	for _, ann := range []*announcer.Announcer{a.ann.Load(), a.l2ann.Load()} {
		if ann != nil {
			n += ann.OutsidePools()
		}
	}
	return n
}
