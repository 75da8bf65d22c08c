package bgp

import (
	"net/netip"
	"testing"

	v1 "k8s.io/api/core/v1"

	speaker "github.com/metal-ccm/metal-ccm/pkg/bgp"
	"github.com/metal-ccm/metal-ccm/pkg/config"
)

// TestUnnumberedAgentPeers: a node agent's peer on an interface is a
// link-local session (the router's link-local address when given, else
// none: found on the link) whose paths carry the agent's own link-local
// address as next hop; an address peer beside it keeps the next hops given.
func TestUnnumberedAgentPeers(t *testing.T) {
	cfg := agentConfig(t, `  - {interface: eth1, asn: 65001}
  - {interface: eth2, linkLocalAddress: "fe80::2", asn: 65002, name: tor-b}
  - {address: 198.18.30.1, asn: 65003}
`)
	n := &v1.Node{Status: v1.NodeStatus{Addresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "198.18.30.11"}}}}
	got, err := agentSpeakerConfig(cfg, n)
	if err != nil {
		t.Fatal(err)
	}
	want := []speaker.Peer{
		{Name: "eth1", Interface: "eth1", NextHopSelf: true},
		{Name: "tor-b", Interface: "eth2", Address: netip.MustParseAddr("fe80::2"), NextHopSelf: true},
		{Name: "198.18.30.1", Address: netip.MustParseAddr("198.18.30.1")},
	}
	if len(got.Peers) != len(want) {
		t.Fatalf("peers %+v, want %d", got.Peers, len(want))
	}
	for i, w := range want {
		p := got.Peers[i]
		if p.Name != w.Name || p.Interface != w.Interface || p.Address != w.Address || p.NextHopSelf != w.NextHopSelf {
			t.Errorf("peer %d: name %q interface %q address %v next-hop self %v; want %q %q %v %v",
				i, p.Name, p.Interface, p.Address, p.NextHopSelf, w.Name, w.Interface, w.Address, w.NextHopSelf)
		}
	}
	if got.RouterID != netip.MustParseAddr("198.18.30.11") {
		t.Errorf("router ID %s, want the node's InternalIP", got.RouterID)
	}
}

// TestUnnumberedReplicaPeers: the replicas' router ID comes from
// bgp.routerID or an address peer, never from a peer on an interface; their
// paths keep the nodes as next hops.
func TestUnnumberedReplicaPeers(t *testing.T) {
	for _, tc := range []struct{ name, peers, wantID string }{
		{"interface peers only, routerID given", "  routerID: 198.18.0.7\n  peers:\n  - {interface: eth1, asn: 65001}\n", "198.18.0.7"},
		{"an address peer after the interface peer", "  peers:\n  - {interface: eth1, asn: 65001}\n  - {address: 198.18.10.1, asn: 65001, localAddress: 198.18.10.2}\n", "198.18.10.2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte("apiVersion: metal-ccm.io/v1alpha1\nkind: CloudConfig\nbgp:\n  asn: 64512\n" + tc.peers))
			if err != nil {
				t.Fatal(err)
			}
			b, err := speakerConfig(&cfg.BGP, &cfg.Routes)
			if err != nil {
				t.Fatal(err)
			}
			if b.RouterID.String() != tc.wantID {
				t.Errorf("router ID %s, want %s", b.RouterID, tc.wantID)
			}
			if p := b.Peers[0]; p.Interface != "eth1" || p.Address.IsValid() || p.NextHopSelf {
				t.Errorf("peer 0 %+v: want a link-local session on eth1, the router found there, the nodes as next hops", p)
			}
		})
	}
}

// TestPeerStateWhere: the status and the metrics name a link-local
// session's router by its zoned address, or by its interface until found.
func TestPeerStateWhere(t *testing.T) {
	for _, tc := range []struct {
		st   speaker.PeerState
		want string
	}{
		{speaker.PeerState{Address: netip.MustParseAddr("198.18.10.1")}, "198.18.10.1"},
		{speaker.PeerState{Interface: "eth1"}, "eth1"},
		{speaker.PeerState{Interface: "eth1", Address: netip.MustParseAddr("fe80::1%eth1")}, "fe80::1%eth1"},
	} {
		if got := tc.st.Where(); got != tc.want {
			t.Errorf("%+v: Where() = %q, want %q", tc.st, got, tc.want)
		}
	}
}

// agentConfig parses a node agents' cloud-config of bgp.asn 64512 with
// these peers (YAML list entries).
func agentConfig(t *testing.T, peers string) *config.CloudConfig {
	t.Helper()
	cfg, err := config.Parse([]byte("apiVersion: metal-ccm.io/v1alpha1\nkind: CloudConfig\nbgp:\n  asn: 64512\n  announceFrom: Nodes\n  peers:\n" + peers))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
