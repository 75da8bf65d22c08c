package metal

import (
	"context"
	"errors"
	"net/netip"

	"k8s.io/component-base/metrics"

	"github.com/metal-ccm/metal-ccm/pkg/announcer"
	"github.com/metal-ccm/metal-ccm/pkg/bgp/community"
	"github.com/metal-ccm/metal-ccm/pkg/config"
)

// backend is one announcement protocol: it runs in every replica and puts
// what the announcer decides on the network. Each is built from its own
// config section by its entry in protocols, so that a new protocol (L2 with
// ARP and NDP) is its own package plus one adapter file here, not edits
// across the provider.
type backend interface {
	announcer.Backend
	// Name names the protocol in logs.
	Name() string
	// Run starts the protocol and returns once it is started; it then runs
	// until Stop, whatever happens to ctx.
	Run(ctx context.Context) error
	// Stop ends the protocol for a replica about to exit, as cfg (the config
	// in force now: a reload applies) says. othersRun tells, taking up to a
	// few seconds, whether another replica is known to run (and so to
	// announce the same addresses).
	Stop(ctx context.Context, cfg *config.CloudConfig, othersRun func() bool)
	// Collect sends the protocol's metrics (docs/metrics.md).
	Collect(ch chan<- metrics.Metric)
}

// protocol builds a backend from the config, or nil when the config does
// not ask for this protocol.
type protocol func(cfg *config.CloudConfig) (backend, error)

// protocols are the announcement protocols, in the order they are started.
var protocols = []protocol{newBGPBackend}

// buildBackends builds the backends the config asks for.
func buildBackends(cfg *config.CloudConfig) ([]backend, error) {
	var out []backend
	for _, build := range protocols {
		b, err := build(cfg)
		if err != nil {
			return nil, err
		}
		if b != nil {
			out = append(out, b)
		}
	}
	return out, nil
}

// backends is the announcer's Backend over every running protocol: each
// prefix goes to all of them (a protocol per pool is the L2 issue's work).
type backends []backend

func (bs backends) SetPaths(ctx context.Context, prefix netip.Prefix, nextHops []netip.Addr) error {
	var errs []error
	for _, b := range bs {
		if err := b.SetPaths(ctx, prefix, nextHops); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// SetCommunities passes the communities of prefix to the backends that
// take them (BGP).
func (bs backends) SetCommunities(ctx context.Context, prefix netip.Prefix, c community.Set) error {
	var errs []error
	for _, b := range bs {
		if cb, ok := b.(announcer.CommunityBackend); ok {
			if err := cb.SetCommunities(ctx, prefix, c); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
