package bgp

import (
	"errors"
	"net/netip"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metal-ccm/metal-ccm/pkg/config"
)

func TestAgentSpeakerConfig(t *testing.T) {
	cfg, err := config.Parse([]byte(`apiVersion: metal-ccm.io/v1alpha1
kind: CloudConfig
bgp:
  asn: 64512
  announceFrom: Nodes
  nodeASNLabel: metal-ccm.io/asn
  peers:
  - {address: 198.18.30.1, asn: 65001, nodeSelector: {matchLabels: {topology.kubernetes.io/zone: rack1}}, ebgpMultihop: 2, holdTime: 9s}
  - {address: 198.18.31.1, asn: 65002, nodeSelector: {matchLabels: {topology.kubernetes.io/zone: rack2}}}
  - {address: "2001:db8:30::1", asn: 65001}
`))
	if err != nil {
		t.Fatal(err)
	}
	node := func(labels map[string]string, ips ...string) *v1.Node {
		n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: labels}}
		for _, ip := range ips {
			n.Status.Addresses = append(n.Status.Addresses, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip})
		}
		return n
	}
	for _, tc := range []struct {
		name      string
		node      *v1.Node
		wantASN   uint32
		wantID    string
		wantPeers []string
		wantErr   error
	}{
		{name: "rack1, its own AS", node: node(map[string]string{"topology.kubernetes.io/zone": "rack1", "metal-ccm.io/asn": "65101"}, "2001:db8:30::11", "198.18.30.11"),
			wantASN: 65101, wantID: "198.18.30.11", wantPeers: []string{"198.18.30.1", "2001:db8:30::1"}},
		{name: "rack2, bgp.asn", node: node(map[string]string{"topology.kubernetes.io/zone": "rack2"}, "198.18.31.11"),
			wantASN: 64512, wantID: "198.18.31.11", wantPeers: []string{"198.18.31.1", "2001:db8:30::1"}},
		{name: "bad AS label", node: node(map[string]string{"metal-ccm.io/asn": "rack"}, "198.18.30.11"), wantErr: ErrBadASNLabel},
		{name: "no InternalIP for the router ID", node: node(nil), wantErr: ErrNoInternalIP},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := agentSpeakerConfig(cfg, tc.node)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr != nil {
				return
			}
			if got.ASN != tc.wantASN || got.RouterID != netip.MustParseAddr(tc.wantID) {
				t.Errorf("ASN %d router ID %s, want %d and %s", got.ASN, got.RouterID, tc.wantASN, tc.wantID)
			}
			var peers []string
			for _, p := range got.Peers {
				peers = append(peers, p.Address.String())
				if p.LocalAddress.IsValid() {
					t.Errorf("peer %s has a fixed source address %s", p.Address, p.LocalAddress)
				}
			}
			if len(peers) != len(tc.wantPeers) || peers[0] != tc.wantPeers[0] || peers[1] != tc.wantPeers[1] {
				t.Errorf("peers %v, want %v", peers, tc.wantPeers)
			}
			if p := got.Peers[0]; p.Address.String() == "198.18.30.1" && (p.MultihopTTL != 2 || p.RestartTime != 9*time.Second) {
				t.Errorf("multihop TTL %d, restart time %s; want 2 and the hold time 9s", p.MultihopTTL, p.RestartTime)
			}
			if p := got.Peers[1]; p.RestartTime != 90*time.Second {
				t.Errorf("peer %s: restart time %s, want the default hold time 90s (the default restart time is 120s)", p.Address, p.RestartTime)
			}
		})
	}
}

// TestSpeakerConfigPodRoutesDeny: a peer with podRoutes false gets nothing
// inside routes.clusterCIDRs from an agent either.
func TestSpeakerConfigPodRoutesDeny(t *testing.T) {
	cfg, err := config.Parse([]byte(`apiVersion: metal-ccm.io/v1alpha1
kind: CloudConfig
bgp:
  asn: 64512
  announceFrom: Nodes
  peers:
  - {address: 198.18.1.1, asn: 64500}
  - {address: 198.18.1.2, asn: 64500, podRoutes: false}
routes:
  enabled: true
  clusterCIDRs: [198.19.0.0/16]
`))
	if err != nil {
		t.Fatal(err)
	}
	n := &v1.Node{Status: v1.NodeStatus{Addresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "198.18.1.11"}}}}
	got, err := agentSpeakerConfig(cfg, n)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Peers) != 2 || len(got.Peers[0].Deny) != 0 ||
		!slices.Equal(got.Peers[1].Deny, []netip.Prefix{netip.MustParsePrefix("198.19.0.0/16")}) {
		t.Errorf("peers %+v: want no filter on the first, 198.19.0.0/16 denied to the second", got.Peers)
	}
}
