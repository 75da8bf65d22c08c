package metallb

import (
	"path"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/migrate"
)

// ebgpMultihopTTL is the TTL MetalLB's ebgpMultiHop: true gives its
// sessions (FRR's ebgp-multihop without a number).
const ebgpMultihopTTL = 255

// convertPeers writes one peer per BGPPeer. The speaker's own AS is the
// first BGPPeer's myASN: MetalLB lets each peer have its own.
func (c *converter) convertPeers(b *config.BGP) {
	c.peerName, c.peerIBGP = map[string]string{}, map[string]bool{}
	if len(c.in.peers) == 0 {
		return
	}
	b.AnnounceFrom = c.opts.AnnounceFrom
	b.ASN = c.in.peers[0].Spec.MyASN
	byAddress := map[string]string{}
	for _, p := range c.in.peers {
		r := ref(KindBGPPeer, &p.object)
		s := &p.Spec
		if s.MyASN != b.ASN {
			c.rep.Add(r, "spec.myASN", "%d differs from the first BGPPeer's %d: the speaker has one AS (bgp.asn); per node, bgp.nodeASNLabel with announceFrom Nodes", s.MyASN, b.ASN)
		}
		if s.PeerAddress == "" {
			what := "no peerAddress"
			if s.Interface != "" {
				what = "an unnumbered session (spec.interface " + s.Interface + ")"
			}
			c.rep.Add(r, "spec.interface", "%s: no equivalent, the peer is left out", what)
			continue
		}
		asn := s.PeerASN
		if asn == 0 {
			if s.DynamicASN != "internal" {
				c.rep.Add(r, "spec.dynamicASN", "%q: no equivalent, a peer needs its AS number: the peer is left out", s.DynamicASN)
				continue
			}
			asn = s.MyASN
		}
		if other, dup := byAddress[s.PeerAddress]; dup {
			c.rep.Add(r, "spec.peerAddress", "%s is also the address of peer %s: one session per router address, the peer is left out and its advertisements go to %s", s.PeerAddress, other, other)
			c.peerName[p.Metadata.Name] = other
			continue
		}
		name, ok := migrate.Label(p.Metadata.Name)
		if !ok {
			c.rep.Add(r, "metadata.name", "not a DNS label: the peer is named %q", name)
		}
		peer := config.BGPPeer{Name: name, Address: s.PeerAddress, ASN: asn, Port: s.PeerPort, HoldTime: s.HoldTime}
		c.peerOptions(r, p, &peer)
		byAddress[s.PeerAddress] = name
		c.peerName[p.Metadata.Name] = name
		c.peerIBGP[name] = asn == b.ASN
		b.Peers = append(b.Peers, peer)
	}
}

// peerOptions maps a BGPPeer's session options and reports those with no
// equivalent.
func (c *converter) peerOptions(r string, p *bgpPeer, peer *config.BGPPeer) {
	s := &p.Spec
	if k := s.KeepaliveTime; k != nil && !keepaliveMatches(k.Duration, s.HoldTime) {
		c.rep.Add(r, "spec.keepaliveTime", "%s: no equivalent, keepalives go at a third of the hold time", k.Duration)
	}
	if s.ConnectTime != nil {
		c.rep.Add(r, "spec.connectTime", "%s: no equivalent, the speaker's own retry time applies", s.ConnectTime.Duration)
	}
	if s.RouterID != "" {
		c.rep.Add(r, "spec.routerID", "%s: no per-peer router ID: with announceFrom Nodes each agent uses its node's IPv4 address (IPv6-only: the IPv6 one folded), with Replicas bgp.routerID", s.RouterID)
	}
	if s.SourceAddress != "" {
		if c.opts.AnnounceFrom == config.AnnounceFromReplicas {
			peer.LocalAddress = s.SourceAddress
		} else {
			c.rep.Add(r, "spec.sourceAddress", "%s: with announceFrom Nodes each agent uses its node's address on the route to the peer", s.SourceAddress)
		}
	}
	c.nodeSelectors(r, s.NodeSelectors, peer)
	if s.Password != "" || s.PasswordSecret != nil {
		peer.PasswordFile = path.Join(c.opts.PasswordDir, peer.Name)
		from := "spec.password"
		if s.PasswordSecret != nil {
			from = "the key password of the Secret " + secretName(s.PasswordSecret, p.Metadata.Namespace)
		}
		field := "spec.password"
		if s.PasswordSecret != nil {
			field = "spec.passwordSecret"
		}
		c.rep.Add(r, field, "the password is read from a file: put %s under the key %s of the Secret metal-ccm-bgp (the chart's bgpPasswords), mounted at %s", from, peer.Name, peer.PasswordFile)
	}
	if s.BFDProfile != "" {
		c.peerBFD(r, s.BFDProfile, peer)
	}
	if s.EBGPMultiHop {
		peer.EBGPMultihop = ebgpMultihopTTL
	}
	if s.VRFName != "" {
		c.rep.Add(r, "spec.vrf", "%s: no VRF: the session goes out through the main routing table", s.VRFName)
	}
	if s.DualStackAddressFamily {
		c.rep.Add(r, "spec.dualStackAddressFamily", "no equivalent: each session carries the addresses of its own family; add a peer of the other family")
	}
}

// nodeSelectors maps a BGPPeer's node selectors: with announceFrom Nodes,
// one selector is the peer's nodeSelector.
func (c *converter) nodeSelectors(r string, sels []metav1.LabelSelector, peer *config.BGPPeer) {
	switch {
	case len(sels) == 0:
	case c.opts.AnnounceFrom != config.AnnounceFromNodes:
		c.rep.Add(r, "spec.nodeSelectors", "no equivalent with announceFrom Replicas: the replicas peer, not the nodes")
	case len(sels) == 1:
		sel := sels[0]
		peer.NodeSelector = &sel
	default:
		c.rep.Add(r, "spec.nodeSelectors", "%d selectors (any matching): a peer has one nodeSelector; none is set, so every node's agent peers: merge them into one", len(sels))
	}
}

// keepaliveMatches tells whether MetalLB's keepalive time is the third of
// the hold time that the speaker uses anyway.
func keepaliveMatches(keepalive time.Duration, hold *metav1.Duration) bool {
	h := config.DefaultHoldTime
	if hold != nil {
		h = hold.Duration
	}
	return keepalive == h/3
}

func secretName(s *secretReference, ns string) string {
	if s.Namespace != "" {
		ns = s.Namespace
	}
	if ns == "" {
		return s.Name
	}
	return ns + "/" + s.Name
}
