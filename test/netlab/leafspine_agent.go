package netlab

import (
	"fmt"
	"strings"
	"time"
)

// LeafSpineZoneLabel is the Node label whose value (LeafSpineZone) puts a
// node in its rack: the peers of AgentCloudConfig select on it.
const LeafSpineZoneLabel = "topology.kubernetes.io/zone"

// LeafSpineZone is the zone of rack r's nodes ("rack0", "rack1").
func LeafSpineZone(r int) string { return fmt.Sprintf("rack%d", r) }

// LeafSpineBFD is the agents' BFD profile with LeafSpineOptions.BFD, as a
// peer's YAML field: the ToRs' (300 ms × 3).
const LeafSpineBFD = "bfd: {receiveInterval: 300ms, transmitInterval: 300ms, multiplier: 3}"

// AgentCloudConfig is the node agents' cloud-config for this lab, as
// docs/leaf-spine.md gives it: announceFrom Nodes, one pool of the given
// ranges, and per rack the ToR's IPv4 and IPv6 addresses as peers with the
// ToR's AS, selected by the rack's zone (LeafSpineZoneLabel), with the given
// hold time, and LeafSpineBFD with Opts.BFD. The lab's nodes run no kube-proxy: no health checks. More
// top-level YAML may be appended to it.
func (ls *LeafSpine) AgentCloudConfig(holdTime time.Duration, pool ...string) string {
	var b strings.Builder
	b.WriteString(ls.agentConfigHead(pool))
	bfd := ""
	if ls.Opts.BFD {
		bfd = ", " + LeafSpineBFD
	}
	for r := range ls.Tors {
		for _, f := range []Family{IPv4, IPv6} {
			fmt.Fprintf(&b, "  - {address: %q, asn: %d, holdTime: %s, nodeSelector: {matchLabels: {%s: %s}}%s}\n",
				LeafSpineTorAddr(f, r), ls.Opts.TorASN[r], holdTime, LeafSpineZoneLabel, LeafSpineZone(r), bfd)
		}
	}
	return b.String()
}

// agentConfigHead is the agents' cloud-config up to the peers' entries:
// one pool of the given ranges, no health checks, announceFrom Nodes.
func (ls *LeafSpine) agentConfigHead(pool []string) string {
	quoted := make([]string, len(pool))
	for i, p := range pool {
		quoted[i] = fmt.Sprintf("%q", p)
	}
	return fmt.Sprintf(`apiVersion: metal-ccm.io/v1alpha1
kind: CloudConfig
loadBalancer:
  pools:
  - name: default
    addresses: [%s]
healthChecks:
  enabled: false
bgp:
  asn: %d
  announceFrom: Nodes
  peers:
`, strings.Join(quoted, ", "), ls.Opts.NodeASN)
}
