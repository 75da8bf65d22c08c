package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/routerid"
	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// replicaPeersOptions are the options of a lab replicaPeers runs in.
var replicaPeersOptions = netlab.Options{Speakers: 2, UnnumberedSpeaker: true}

// unnumberedRouterID is the unnumbered replica's bgp.routerID: no peer of
// its has an address to take one from.
const unnumberedRouterID = "198.18.10.9"

// replicaPeers runs, in a lab of replicaPeersOptions whose replica first
// (speaker 0, both families' sessions) leads lease, two more replicas of
// the same pools one after the other, each then left alone to announce
// (the one before stopped: a Cease, since another replica runs), so that
// the router's paths and kernel routes are that replica's only:
//
//   - one whose only peer is the router's IPv6 address (from speaker 1's
//     IPv6 address, no bgp.routerID): the router sees the router ID folded
//     from that address (docs/node-agent.md, "IPv6-only nodes"), learns the
//     IPv6 address of a dual-stack Service with the nodes as next hops and
//     routes it, and the client reaches it; the IPv4 address goes;
//   - one whose only peer is the router by interface, the host's link to
//     the node segment (BGP unnumbered: a link-local session, the router
//     found from its Router Advertisements), with bgp.routerID: the router
//     learns both addresses over that session, the nodes as next hops,
//     routes them and the client reaches both.
func replicaPeers(t *testing.T, lab *netlab.Lab, first *framework.CCM, ns, lease, pool4, pool6 string) {
	start := time.Now()
	defer func() { t.Logf("replicas' peers: %s", time.Since(start).Round(time.Millisecond)) }()
	framework.CreateLoadBalancer(t, client, ns, "dual", framework.DualStack)
	var vip4, vip6 netip.Addr
	for _, v := range waitVIPs(t, ns, "dual", 2) {
		if v.Is4() {
			vip4 = v
		} else {
			vip6 = v
		}
		if err := lab.ServeVIP(v); err != nil {
			t.Fatal(err)
		}
	}
	v4, v6 := lab.NodeAddrs(netlab.IPv4), lab.NodeAddrs(netlab.IPv6)
	waitRoute(t, lab, vip6, v6...)

	// IPv6 peers only.
	spk6 := lab.SpeakerAddrs(netlab.IPv6)[1]
	v6only := startReplicaWith(t, "ccm-v6only-"+string(lab.RouterKind()), "", lease, writeCloudConfig(t, "cloud-config-v6only.yaml",
		replicaCloudConfig(pool4, pool6, "", fmt.Sprintf("{address: %q, asn: %d, localAddress: %q, holdTime: 9s}",
			netlab.RouterAddr(netlab.IPv6), netlab.DefaultRouterASN, spk6))))
	// Its Services' release, once the test ends, runs while it still
	// does (cleanups run last first).
	framework.ReleaseAtEnd(t, client, ns, 30*time.Second)
	waitEstablished(t, lab, sessionTimeout, spk6)
	ids, err := lab.NeighborIDs()
	if err != nil {
		t.Fatal(err)
	}
	if want := routerid.FromIPv6(spk6); ids[spk6] != want {
		t.Errorf("the router sees router ID %v from %s, want %s (folded from the address)", ids[spk6], spk6, want)
	}
	if spk4 := lab.SpeakerAddrs(netlab.IPv4)[1]; ids[spk4].IsValid() {
		t.Errorf("the router has an IPv4 session from %s", spk4)
	}
	stopReplica(t, first)
	waitPaths(t, lab, vip6, []netip.Addr{spk6}, v6)
	waitRoute(t, lab, vip4)
	requireAnswers(t, lab, vip6)
	if t.Failed() {
		return
	}
	t.Logf("IPv6 peers only: done at %s", time.Since(start).Round(time.Millisecond))

	// Unnumbered.
	// FRR is found from its Router Advertisements; BIRD sends none there
	// (netlab's UnnumberedSpeaker says why), so it is named.
	ll := ""
	if lab.RouterKind() == netlab.RouterBIRD {
		ll = fmt.Sprintf(", linkLocalAddress: %q", netlab.RouterLinkLocal)
	}
	startReplicaWith(t, "ccm-unnumbered-"+string(lab.RouterKind()), "", lease, writeCloudConfig(t, "cloud-config-unnumbered.yaml",
		replicaCloudConfig(pool4, pool6, unnumberedRouterID, fmt.Sprintf("{interface: %s, asn: %d, holdTime: 9s%s}",
			lab.HostLink, netlab.DefaultRouterASN, ll))))
	framework.ReleaseAtEnd(t, client, ns, 30*time.Second)
	waitEstablished(t, lab, sessionTimeout, netlab.SpeakerLinkLocal)
	if ids, err = lab.NeighborIDs(); err != nil {
		t.Fatal(err)
	}
	if got := ids[netlab.SpeakerLinkLocal]; got.String() != unnumberedRouterID {
		t.Errorf("the router sees router ID %v from %s, want bgp.routerID %s", got, netlab.SpeakerLinkLocal, unnumberedRouterID)
	}
	both := []netip.Addr{spk6, netlab.SpeakerLinkLocal}
	waitPaths(t, lab, vip6, both, v6)
	stopReplica(t, v6only)
	waitPaths(t, lab, vip4, both[1:], v4)
	waitPaths(t, lab, vip6, both[1:], v6)
	requireAnswers(t, lab, vip4)
	requireAnswers(t, lab, vip6)
}

// replicaCloudConfig is a replica's cloud-config with the pools, a router
// ID ("": none) and one peer (a YAML flow mapping).
func replicaCloudConfig(pool4, pool6, routerID, peer string) string {
	id := ""
	if routerID != "" {
		id = "\n  routerID: " + routerID
	}
	return netlab.CloudConfigHead(pool4, pool6, netlab.DefaultSpeakerASN) + id + "\n  peers:\n  - " + peer + "\n"
}

// requireAnswers checks that the client's requests to vip reach every node.
func requireAnswers(t *testing.T, lab *netlab.Lab, vip netip.Addr) {
	t.Helper()
	seen, err := netlab.Answers(context.Background(), lab.ClientGet, netlab.VIPURL(vip), 30)
	if err != nil {
		t.Fatalf("requests to %s: %v", vip, err)
	}
	for i := range lab.Nodes {
		if seen[lab.NodeName(i)] == 0 {
			t.Errorf("30 requests to %s reached %v, want every node", vip, seen)
			return
		}
	}
}
