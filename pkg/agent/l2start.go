package agent

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	v1 "k8s.io/api/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/announcer"
	"github.com/metal-ccm/metal-ccm/pkg/config"
	l2resp "github.com/metal-ccm/metal-ccm/pkg/l2"
	"github.com/metal-ccm/metal-ccm/pkg/l2/member"
	"github.com/metal-ccm/metal-ccm/pkg/nodes"
)

// leaveTimeout bounds how long a stopping agent tells the others it leaves,
// so that they take its addresses over at once instead of after the
// detection time.
const leaveTimeout = time.Second

// startL2 joins the L2 agents' membership, starts the responder and the
// announcer of every L2 address's eligible nodes, and returns what runs
// them until ctx ends.
func (a *Agent) startL2(ctx context.Context, node *v1.Node, inf announcer.Informers) (func(context.Context), error) {
	logger := klog.FromContext(ctx)
	cfg := &a.Config.L2
	bind, _ := nodes.InternalIP(node, true) // waitNode made sure there is one
	self := []netip.Addr{bind}
	if v6, ok := nodes.InternalIP(node, false); ok {
		self = append(self, v6)
	}
	if err := l2resp.RaiseNetRaw(); err != nil {
		return nil, err
	}
	key, err := member.ReadKey(cfg.SecretFile)
	if err != nil {
		return nil, err
	}
	members, err := member.Start(ctx, member.Config{
		Name: a.NodeName, Addresses: self, Bind: netip.AddrPortFrom(bind, cfg.MemberlistPort),
		SecretKey: key, Timing: member.DefaultTiming(),
	})
	if err != nil {
		return nil, fmt.Errorf("L2 membership: %w", err)
	}
	responder := l2resp.New(l2resp.Options{Interfaces: cfg.Interfaces, Refresh: l2resp.DefaultRefresh})
	l := newL2(self, members, responder, corelisters.NewNodeLister(inf.Nodes.GetIndexer()), cfg.Selects, cfg.MemberlistPort)
	// Every eligible node of each address, up to the most the announcer
	// keeps: the owner is chosen among those of them whose agent is alive.
	ann := announcer.New(inf, l.candidates, a.Config.LoadBalancer.Rule().Wants,
		announcer.Options{MaxNextHops: announcer.MaxNextHops, Addresses: a.Config.LoadBalancer.Announcer(config.ProtocolL2)})
	a.l2ann.Store(ann)
	a.l2.Store(l)
	logger.Info("Answering ARP and Neighbor Solicitations for the L2 addresses this node owns", "membership", netip.AddrPortFrom(bind, cfg.MemberlistPort),
		"interfaces", cfg.Interfaces, "encrypted", key != nil)
	return func(ctx context.Context) {
		go func() {
			if err := responder.Run(ctx); err != nil {
				logger.Error(err, "L2 responder stopped")
			}
		}()
		go ann.Run(ctx)
		l.run(ctx, ann.Synced) // returns silent
		if err := members.Leave(leaveTimeout); err != nil {
			logger.V(2).Info("Leaving the L2 membership", "err", err)
		}
		members.Shutdown()
	}, nil
}
