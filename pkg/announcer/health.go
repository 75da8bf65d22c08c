package announcer

import (
	"context"
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/healthcheck"
)

// HealthChecks configure the checks of the nodes an address is announced
// with (docs/loadbalancer.md, "Node health checks").
type HealthChecks struct {
	healthcheck.Options
	// ProxyPort is kube-proxy's health port (/healthz), checked on every
	// eligible node for Services with externalTrafficPolicy Cluster. A
	// Local Service's nodes are checked on its healthCheckNodePort.
	ProxyPort uint16
	// Observer is told of every check and change (metrics); may be nil.
	Observer healthcheck.Observer
	// Events records a node's withdrawal and return; may be nil.
	Events func(node string, healthy bool, target netip.AddrPort)
	// Unreachable is told when this replica starts and stops reaching no
	// node at all (every node's check fails: all stay announced); may be
	// nil.
	Unreachable func(unreachable bool, nodes int)
}

// checker is what the announcer needs of a healthcheck.Checker.
type checker interface {
	Run(ctx context.Context)
	Set(targets []netip.AddrPort)
	State(target netip.AddrPort) healthcheck.State
	Counts() map[healthcheck.State]int
}

// health is the announcer's view of the checks: which target is whose,
// owned by the run loop except for the checker itself.
type health struct {
	opts    HealthChecks
	checker checker
	// nodeOf names the node of each target, for Events.
	nodeOf map[netip.AddrPort]string
	// local are the targets of each Local Service (key namespace/name).
	local map[string][]netip.AddrPort
	// unreachable: every node target failed at the last count (logged
	// once); read by tests.
	unreachable atomic.Bool
	// failClosed: a node agent's checks of its own node; a failing node
	// withdraws itself, as the other nodes' agents announce theirs.
	failClosed bool
}

func newHealth(o HealthChecks, notify func(netip.AddrPort)) *health {
	return &health{opts: o, checker: healthcheck.New(o.Options, notify, o.Observer),
		nodeOf: map[netip.AddrPort]string{}, local: map[string][]netip.AddrPort{}}
}

// target is where node h is checked on port: its IPv4 next hop, else its
// IPv6 one (kube-proxy serves both families; one check is enough).
func target(h nodeHops, port uint16) netip.AddrPort {
	if h.v4.IsValid() {
		return netip.AddrPortFrom(h.v4, port)
	}
	return netip.AddrPortFrom(h.v6, port)
}

// healthy keeps the nodes whose check on port passed; when none passed it
// keeps them all (fail open: a checker that reaches no node must not take a
// Service off the network), except in a node agent (failClosed). A node not
// yet checked counts as failed, so a node joins an address only once it has
// passed; when a replica starts, the announcer waits for the first round of
// checks before it announces.
func (h *health) healthy(nodes map[string]nodeHops, port uint16) map[string]nodeHops {
	if h == nil || len(nodes) == 0 {
		return nodes
	}
	out := make(map[string]nodeHops, len(nodes))
	for name, hops := range nodes {
		if h.checker.State(target(hops, port)) == healthcheck.Healthy {
			out[name] = hops
		}
	}
	if len(out) == 0 && !h.failClosed {
		return nodes
	}
	return out
}

// localPort is the port a Local Service's nodes are checked on (0: none).
func localPort(svc *v1.Service) uint16 {
	if svc.Spec.HealthCheckNodePort <= 0 || svc.Spec.HealthCheckNodePort > 65535 {
		return 0
	}
	return uint16(svc.Spec.HealthCheckNodePort)
}

// setLocal records the targets of a Local Service (none when it is gone or
// not Local) and reports whether they changed.
func (h *health) setLocal(key string, nodes map[string]nodeHops, port uint16) bool {
	if h == nil {
		return false
	}
	if port == 0 || len(nodes) == 0 {
		_, had := h.local[key]
		delete(h.local, key)
		return had
	}
	ts := make([]netip.AddrPort, 0, len(nodes))
	for _, hops := range nodes {
		ts = append(ts, target(hops, port))
	}
	slices.SortFunc(ts, func(a, b netip.AddrPort) int { return a.Compare(b) })
	if slices.Equal(ts, h.local[key]) {
		return false
	}
	h.local[key] = ts
	return true
}

// apply hands the checker every target: each eligible node's kube-proxy,
// and each Local Service's nodes.
func (h *health) apply(eligible map[string]nodeHops) {
	if h == nil {
		return
	}
	clear(h.nodeOf)
	for name, hops := range eligible {
		h.nodeOf[target(hops, h.opts.ProxyPort)] = name
	}
	byAddr := map[netip.Addr]string{}
	for name, hops := range eligible {
		byAddr[target(hops, 0).Addr()] = name
	}
	for _, ts := range h.local {
		for _, t := range ts {
			h.nodeOf[t] = byAddr[t.Addr()]
		}
	}
	all := make([]netip.AddrPort, 0, len(h.nodeOf))
	for t := range h.nodeOf {
		all = append(all, t)
	}
	h.checker.Set(all)
}

// report logs (once) when no node target passes: this replica reaches no
// node, and keeps announcing every eligible node.
func (h *health) report(ctx context.Context, eligible map[string]nodeHops) {
	// A node agent checks its own node only, and fails closed: nothing to
	// say beyond the node's own withdrawal.
	if h == nil || h.failClosed || len(eligible) == 0 {
		return
	}
	for _, hops := range eligible {
		if h.checker.State(target(hops, h.opts.ProxyPort)) != healthcheck.Unhealthy {
			if h.unreachable.Swap(false) {
				klog.FromContext(ctx).Info("Node health checks pass again", "nodes", len(eligible))
				if h.opts.Unreachable != nil {
					h.opts.Unreachable(false, len(eligible))
				}
			}
			return
		}
	}
	if !h.unreachable.Swap(true) {
		klog.FromContext(ctx).Error(nil, "No node passes its health check from this replica: every eligible node stays announced (fail open)",
			"nodes", len(eligible), "port", h.opts.ProxyPort)
		if h.opts.Unreachable != nil {
			h.opts.Unreachable(true, len(eligible))
		}
	}
}

// events records the changes of node targets (kube-proxy's health) as
// Events on their nodes; a Local Service's targets only log.
func (h *health) events(ctx context.Context, changes []netip.AddrPort) {
	logger := klog.FromContext(ctx)
	for _, t := range changes {
		state := h.checker.State(t)
		node := h.nodeOf[t]
		logger.V(2).Info("Node health changed", "node", node, "target", t, "state", state)
		if h.opts.Events != nil && node != "" && t.Port() == h.opts.ProxyPort && state != healthcheck.Unknown {
			h.opts.Events(node, state == healthcheck.Healthy, t)
		}
	}
}

func (h *health) proxyPort() uint16 {
	if h == nil {
		return 0
	}
	return h.opts.ProxyPort
}

// waitFirstRound waits until every target has a result, or up to the
// checks' timeout and interval: a starting replica then announces the nodes
// that pass, not all of them first and fewer a moment later.
func (h *health) waitFirstRound(ctx context.Context) {
	if h == nil {
		return
	}
	deadline := time.Now().Add(h.opts.Timeout + h.opts.Interval)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if h.checker.Counts()[healthcheck.Unknown] == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// HealthCounts are the health-check targets by state; nil when the checks
// are off.
func (a *Announcer) HealthCounts() map[healthcheck.State]int {
	if a.health == nil {
		return nil
	}
	return a.health.checker.Counts()
}
