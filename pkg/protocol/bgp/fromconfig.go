package bgp

import (
	"fmt"
	"net/netip"
	"os"
	"strings"

	speaker "github.com/metal-ccm/metal-ccm/pkg/bgp"
	"github.com/metal-ccm/metal-ccm/pkg/config"
)

// PeerFrom is the session of the cloud-config's peer p (bgp.peers[i]), as
// both the replicas and the node agents run it: address or interface
// (a link-local session), AS, port, hold
// time, multihop TTL, TTL security, BFD, graceful restart, the pod-route filter (a peer with
// podRoutes false gets nothing inside routes.clusterCIDRs) and the password
// read from its file. The caller adds what differs: the replicas' fixed
// source address.
func PeerFrom(p *config.BGPPeer, i int, r *config.Routes) (speaker.Peer, error) {
	peer := speaker.Peer{Name: p.PeerName(), Address: p.Addr(), ASN: p.ASN, Port: p.Port, MultihopTTL: uint8(p.EBGPMultihop), //nolint:gosec // validated: 0 to 255
		TTLSecurity: p.TTLSecurity}
	if p.Interface != "" {
		peer.Interface, peer.Address = p.Interface, p.LinkLocalAddr()
	}
	if p.DefaultGateway != "" {
		if err := gatewayPeer(&peer, p.DefaultGateway); err != nil {
			return speaker.Peer{}, fmt.Errorf("bgp.peers[%d]: %w", i, err)
		}
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
	if b := p.BFD; b != nil {
		peer.BFD = &speaker.BFD{ReceiveInterval: b.ReceiveInterval.Duration, TransmitInterval: b.TransmitInterval.Duration,
			Multiplier: uint8(b.Multiplier)} //nolint:gosec // validated: 2 to 255
	}
	if p.PodRoutes != nil && !*p.PodRoutes {
		peer.Deny = r.ClusterPrefixes()
	}
	if p.PasswordFile != "" {
		pw, err := os.ReadFile(p.PasswordFile)
		if err != nil {
			return speaker.Peer{}, fmt.Errorf("bgp.peers[%d].passwordFile: %w", i, err)
		}
		peer.Password = strings.TrimRight(string(pw), "\r\n")
	}
	return peer, nil
}

// PolicyFrom is the routing policy of the cloud-config's pools
// (loadBalancer.pools[].bgpAdvertisements), or nil when no pool has one:
// every peer then gets every address as a host route without attributes.
// It keeps lb, which must not change after.
func PolicyFrom(lb *config.LoadBalancer) speaker.Policy {
	out := poolPolicy{lb: lb, ads: map[*config.Pool][]speaker.Advertisement{}}
	for i := range lb.Pools {
		pool := &lb.Pools[i]
		for j := range pool.BGPAdvertisements {
			a := &pool.BGPAdvertisements[j]
			ad := speaker.Advertisement{Peers: a.PeerNames(), Attributes: speaker.Attributes{Communities: a.CommunitySet()}}
			if a.LocalPreference != nil {
				ad.Attributes.LocalPref = *a.LocalPreference
			}
			if agg := a.Aggregate; agg != nil {
				ad.Aggregate4, ad.Aggregate6, ad.AggregateOnly = deref(agg.IPv4Length), deref(agg.IPv6Length), agg.Only
			}
			out.ads[pool] = append(out.ads[pool], ad)
		}
	}
	if len(out.ads) == 0 {
		return nil
	}
	return out
}

// poolPolicy is each pool's advertisements; the addresses of a pool
// without any go out by default. Addresses in no pool never reach the
// speaker (config.LoadBalancer.Announces); pod routes, in no pool, go out by
// default.
type poolPolicy struct {
	lb  *config.LoadBalancer
	ads map[*config.Pool][]speaker.Advertisement
}

func (p poolPolicy) Advertisements(prefix netip.Prefix) []speaker.Advertisement {
	if pool := p.lb.PoolOf(prefix.Addr()); pool != nil {
		return p.ads[pool]
	}
	return nil
}

func deref(n *int) int {
	if n == nil {
		return 0
	}
	return *n
}
