package bgp

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	speaker "github.com/metal-ccm/metal-ccm/pkg/bgp"
	"github.com/metal-ccm/metal-ccm/pkg/bgp/routerid"
	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/nodes"
)

// Errors of the agent's BGP config.
var (
	// ErrNoInternalIP is returned for a node without an InternalIP: the
	// agent's BGP router ID is its node's IPv4 address.
	ErrNoInternalIP = errors.New("node has no InternalIP for the BGP router ID")
	// ErrBadASNLabel is returned when bgp.nodeASNLabel's value on the node
	// is not an AS number.
	ErrBadASNLabel = errors.New("node's AS-number label is not an AS number")
)

// agentSpeakerConfig is the BGP speaker of node n: the peers whose nodeSelector
// matches n (each session's source address is the kernel's choice: the
// node's address on the route to the peer; a peer on an interface gets
// the node's link-local address there as next hop), n's AS number (its
// bgp.nodeASNLabel label, else bgp.asn) and n's IPv4 InternalIP as router ID.
func agentSpeakerConfig(cfg *config.CloudConfig, n *v1.Node) (speaker.Config, error) {
	b := &cfg.BGP
	out := speaker.Config{ASN: b.ASN, Policy: PolicyFrom(&cfg.LoadBalancer)}
	if b.NodeASNLabel != "" {
		if v, ok := n.Labels[b.NodeASNLabel]; ok {
			asn, err := strconv.ParseUint(v, 10, 32)
			if err != nil || asn == 0 {
				return speaker.Config{}, fmt.Errorf("label %s=%q: %w", b.NodeASNLabel, v, ErrBadASNLabel)
			}
			out.ASN = uint32(asn)
		}
	}
	ip, ok := nodes.PrimaryInternalIP(n)
	if !ok {
		return speaker.Config{}, fmt.Errorf("node %s: %w", n.Name, ErrNoInternalIP)
	}
	out.RouterID = routerid.For(ip)
	for i := range b.Peers {
		p := &b.Peers[i]
		if !p.Selects(labels.Set(n.Labels)) {
			continue
		}
		peer, err := PeerFrom(p, i, &cfg.Routes)
		if err != nil {
			return speaker.Config{}, err
		}
		peer.RestartTime = restartTime(peer)
		// On a link-local session the router reaches the node at its
		// link-local address on that link, not at its node address.
		peer.NextHopSelf = peer.Interface != ""
		out.Peers = append(out.Peers, peer)
	}
	return out, nil
}

// restartTime is an agent's graceful-restart time: at most its hold time.
// An agent restarts within seconds (a rolling update: no leader election,
// its caches sync in a second), so the router keeps its node's paths
// across that; but a router also keeps them when the agent dies without
// coming back (its TCP session closes without a NOTIFICATION, as in a
// restart), and then a node's paths must not outlive what the hold time
// would give them.
func restartTime(p speaker.Peer) time.Duration {
	if !p.GracefulRestart || p.HoldTime == 0 {
		return p.RestartTime
	}
	if p.RestartTime == 0 || p.RestartTime > p.HoldTime {
		return p.HoldTime
	}
	return p.RestartTime
}
