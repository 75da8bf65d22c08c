package metal

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/announcer"
	"github.com/metal-ccm/metal-ccm/pkg/bgp"
	"github.com/metal-ccm/metal-ccm/pkg/config"
)

// ErrNoRouterID is returned when bgp.routerID is unset and no IPv4 peer gives one.
var ErrNoRouterID = errors.New("bgp.routerID is not set and there is no IPv4 peer to derive it from")

// RunInEveryReplica starts what must run whoever leads: the BGP speaker and
// the announcer, which announce what the Services' status shows. Without BGP
// peers it does nothing. It returns once they are started. The announcer
// stops with ctx; the speaker does not (its sessions must outlive ctx when
// routers should keep the routes): StopInEveryReplica decides what it does.
func (c *Cloud) RunInEveryReplica(ctx context.Context, cs kubernetes.Interface) error {
	cfg := c.state.Load().cfg
	if len(cfg.BGP.Peers) == 0 {
		return nil
	}
	bcfg, err := speakerConfig(&cfg.BGP, &cfg.Routes)
	if err != nil {
		return fmt.Errorf("start BGP speaker: %w", err)
	}
	speaker, err := bgp.New(bcfg)
	if err != nil {
		return fmt.Errorf("start BGP speaker: %w", err)
	}
	logger := klog.FromContext(ctx).WithName("bgp")
	go func() {
		if err := speaker.Start(klog.NewContext(context.WithoutCancel(ctx), logger)); err != nil {
			logger.Error(err, "BGP speaker stopped")
		}
	}()
	c.speaker.Store(speaker)
	// The announcer only reads: its caches need no managedFields (about 30% of
	// a decoded Service or Node).
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTransform(dropManagedFields))
	ann := announcer.New(factory, speaker, wantsLoadBalancer, announcer.Options{
		PodRoutes:   cfg.Routes.Enabled,
		PodNextHop:  cfg.Routes.NextHopAddressType,
		MaxNextHops: cfg.BGP.MaxPathsPerAddress,
	})
	c.announcer.Store(ann)
	factory.Start(ctx.Done())
	go ann.Run(ctx)
	return nil
}

// StopInEveryReplica ends the speaker's sessions as bgp.onStop says, for a
// replica that is about to exit; othersRun tells whether another replica is
// known to run (and so to announce the same routes); it is asked only for
// Auto, as it may wait for another replica to take the Lease over. Withdrawing closes the
// sessions with a Cease and returns once that is sent; keeping leaves them
// open, to close with the process without a NOTIFICATION, which a router
// with graceful restart treats as a restart: it keeps forwarding on this
// replica's paths until the replica is back or the restart time ends.
func (c *Cloud) StopInEveryReplica(ctx context.Context, othersRun func() bool) {
	speaker := c.speaker.Load()
	if speaker == nil {
		return
	}
	logger := klog.FromContext(ctx).WithName("bgp")
	mode := c.state.Load().cfg.BGP.OnStop
	others := mode == config.StopAuto && othersRun()
	if mode == config.StopWithdraw || others {
		logger.Info("Closing the BGP sessions: routers drop this replica's paths now", "onStop", mode, "otherReplicas", others)
		speaker.Stop()
		return
	}
	logger.Info("Leaving the BGP sessions to close with the process: routers with graceful restart keep this replica's paths until it is back",
		"onStop", mode, "otherReplicas", others)
}

// speakerConfig is the speaker's config from the bgp and routes sections,
// whose values the config's validation parsed. Only the password files are
// read here.
func speakerConfig(b *config.BGP, r *config.Routes) (bgp.Config, error) {
	out := bgp.Config{ASN: b.ASN}
	for i := range b.Peers {
		p := &b.Peers[i]
		peer := bgp.Peer{Address: p.Addr(), ASN: p.ASN, Port: p.Port, LocalAddress: p.LocalAddr()}
		if p.PodRoutes != nil && !*p.PodRoutes {
			peer.Deny = r.ClusterPrefixes()
		}
		if p.HoldTime != nil {
			peer.HoldTime = p.HoldTime.Duration
		}
		if gr := p.GracefulRestart; gr != nil && gr.Enabled != nil && *gr.Enabled {
			peer.GracefulRestart = true
			if gr.RestartTime != nil {
				peer.RestartTime = gr.RestartTime.Duration
			}
		}
		if p.PasswordFile != "" {
			pw, err := os.ReadFile(p.PasswordFile)
			if err != nil {
				return bgp.Config{}, fmt.Errorf("bgp.peers[%d].passwordFile: %w", i, err)
			}
			peer.Password = strings.TrimRight(string(pw), "\r\n")
		}
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
// address of a UDP socket connected to it (no packet is sent).
func routerIDFor(peers []bgp.Peer) (netip.Addr, error) {
	for _, p := range peers {
		if !p.Address.Is4() {
			continue
		}
		if p.LocalAddress.IsValid() {
			return p.LocalAddress, nil
		}
		conn, err := net.Dial("udp4", net.JoinHostPort(p.Address.String(), strconv.Itoa(int(p.Port))))
		if err != nil {
			return netip.Addr{}, fmt.Errorf("derive BGP router ID toward %s: %w", p.Address, err)
		}
		local := conn.LocalAddr().(*net.UDPAddr).AddrPort().Addr().Unmap()
		_ = conn.Close()
		return local, nil
	}
	return netip.Addr{}, ErrNoRouterID
}

// dropManagedFields is an informer transform that drops an object's
// managedFields before it is cached.
func dropManagedFields(obj any) (any, error) {
	if m, ok := obj.(metav1.Object); ok {
		m.SetManagedFields(nil)
	}
	return obj, nil
}
