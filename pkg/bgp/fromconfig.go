package bgp

import (
	"fmt"
	"os"
	"strings"

	"github.com/metal-ccm/metal-ccm/pkg/config"
)

// PeerFrom is the session of the cloud-config's peer p (bgp.peers[i]), as
// both the replicas and the node agents run it: address, AS, port, hold
// time, multihop TTL, graceful restart, and the password read from its
// file. The caller adds what differs: the replicas' fixed source address
// and pod-route filter.
func PeerFrom(p *config.BGPPeer, i int) (Peer, error) {
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
	if p.PasswordFile != "" {
		pw, err := os.ReadFile(p.PasswordFile)
		if err != nil {
			return Peer{}, fmt.Errorf("bgp.peers[%d].passwordFile: %w", i, err)
		}
		peer.Password = strings.TrimRight(string(pw), "\r\n")
	}
	return peer, nil
}
