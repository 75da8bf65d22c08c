package bgp

import (
	"fmt"
	"os"
	"strings"

	"github.com/metal-ccm/metal-ccm/pkg/config"
)

// PeerFrom is the session of the cloud-config's peer p (bgp.peers[i]), as
// both the replicas and the node agents run it: address, AS, port, hold
// time, multihop TTL, graceful restart, the pod-route filter (a peer with
// podRoutes false gets nothing inside routes.clusterCIDRs) and the password
// read from its file. The caller adds what differs: the replicas' fixed
// source address.
func PeerFrom(p *config.BGPPeer, i int, r *config.Routes) (Peer, error) {
	peer := Peer{Address: p.Addr(), ASN: p.ASN, Port: p.Port, MultihopTTL: uint8(p.EBGPMultihop)} //nolint:gosec // validated: 0 to 255
	if p.HoldTime != nil {
		peer.HoldTime = p.HoldTime.Duration
	}
	if gr := p.GracefulRestart; gr != nil && gr.Enabled != nil && *gr.Enabled {
		peer.GracefulRestart = true
		if gr.RestartTime != nil {
			peer.RestartTime = gr.RestartTime.Duration
		}
	}
	if p.PodRoutes != nil && !*p.PodRoutes {
		peer.Deny = r.ClusterPrefixes()
	}
	if p.PasswordFile != "" {
		pw, err := os.ReadFile(p.PasswordFile)
		if err != nil {
			return Peer{}, fmt.Errorf("bgp.peers[%d].passwordFile: %w", i, err)
		}
		peer.Password = strings.TrimRight(string(pw), "\r\n")
	}
	return peer, nil
}
