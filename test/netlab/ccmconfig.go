package netlab

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// CloudConfig is a CCM replica's cloud-config for this lab: one pool with
// pool4 and pool6 (and Options.PoolFields), and the router's IPv4 and IPv6 sessions from speaker
// address i (SpeakerAddrs). More YAML may be appended to it.
func (l *Lab) CloudConfig(i int, pool4, pool6 string) string {
	return l.CloudConfigFrom(l.SpeakerAddrs(IPv4)[i], l.SpeakerAddrs(IPv6)[i], pool4, pool6)
}

// CloudConfigFrom is CloudConfig with the sessions' source addresses given:
// a node's (NodeAddr) for a CCM that runs on a node's network.
func (l *Lab) CloudConfigFrom(local4, local6 netip.Addr, pool4, pool6 string) string {
	bfd := ""
	if l.Opts.BFD {
		bfd = "\n    " + LeafSpineBFD
	}
	return WithPoolFields(CloudConfigHead(pool4, pool6, l.Opts.SpeakerASN)+fmt.Sprintf(`
  peers:
  - address: %s
    asn: %d
    localAddress: %s
    holdTime: 9s%s
  - address: %q
    asn: %d
    localAddress: %q
    holdTime: 9s%s
`, RouterAddr(IPv4), l.Opts.RouterASN, local4, bfd,
		RouterAddr(IPv6), l.Opts.RouterASN, local6, bfd), l.Opts.PoolFields...)
}

// CloudConfigHead is a cloud-config's start: one pool named default with
// pool4 and pool6, and bgp.asn, the bgp section's last line so far (without
// a newline), which its further fields follow.
func CloudConfigHead(pool4, pool6 string, asn uint32) string {
	return fmt.Sprintf(`apiVersion: metal-ccm.io/v1alpha1
kind: CloudConfig
loadBalancer:
  pools:
  - name: default
    addresses: [%s, %q]
bgp:
  asn: %d`, pool4, pool6, asn)
}

// WithPoolFields adds YAML fields ("weightedECMP: true") to the pool named
// default of a cloud-config that CloudConfig or AgentCloudConfig made.
func WithPoolFields(cfg string, fields ...string) string {
	const pool = "  - name: default\n"
	var add strings.Builder
	for _, f := range fields {
		add.WriteString("    " + f + "\n")
	}
	return strings.Replace(cfg, pool, pool+add.String(), 1)
}

// RequireRoute waits up to 20 s until the router's kernel has exactly these
// next hops for p (none: no route), and fails the test otherwise.
func (l *Lab) RequireRoute(t testing.TB, p netip.Prefix, hops ...netip.Addr) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := l.WaitRoute(ctx, p, hops); err != nil {
		r, _, _ := l.Route(p)
		t.Fatalf("route %s: want next hops %v, router has %v: %v", p, hops, r.NextHops, err)
	}
}
