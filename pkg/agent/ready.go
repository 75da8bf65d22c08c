package agent

import (
	"errors"
	"fmt"

	"github.com/metal-ccm/metal-ccm/pkg/config"
)

// Errors of Ready.
var (
	// ErrStarting: the agent has not announced what its caches show yet.
	ErrStarting = errors.New("starting: the announcer has not synced yet")
	// ErrPodRoutesMissing: with routes.enabled, some of the node's pod
	// CIDRs are not announced yet.
	ErrPodRoutesMissing = errors.New("pod routes not announced yet")
)

// Ready reports whether the agent announces what it should: its first sync
// is done and, with routes.enabled, every pod CIDR of its node that has a
// next hop is in its speaker. The chart's readiness probe asks it
// (/readyz), and the CCM's route controller counts a node's pod routes as
// created while its agent's pod is Ready: the kubelet carries the state, so
// the agent needs no write access for it. An idle agent (announceFrom
// Replicas) is ready: it has nothing to do.
func (a *Agent) Ready() error {
	if a.idle.Load() {
		return nil
	}
	if l2 := a.l2.Load(); a.Config.LoadBalancer.HasProtocol(config.ProtocolL2) && (l2 == nil || !l2.synced.Load()) {
		return ErrStarting
	}
	ann := a.ann.Load()
	if ann == nil {
		// No BGP from this node: L2 alone, and no pod routes to wait for.
		if !a.Config.BGP.FromNodes() {
			return nil
		}
		return ErrStarting
	}
	if !ann.Synced() {
		return ErrStarting
	}
	if !a.Config.Routes.Enabled {
		return nil
	}
	if missing := ann.MissingPodRoutes(a.NodeName); len(missing) > 0 {
		return fmt.Errorf("%w: %v", ErrPodRoutesMissing, missing)
	}
	return nil
}
