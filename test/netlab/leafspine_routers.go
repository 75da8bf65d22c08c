package netlab

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
)

// lsRouter is one router of the leaf-spine lab (the spine or a ToR): a
// router namespace as the one-segment lab's, and the config it runs.
type lsRouter struct {
	*routerNS
	conf string // BIRD's or FRR bgpd's
}

// TorConfig is the config ToR r runs: BIRD's bird.conf, or FRR's bgpd
// config (zebra runs with defaults). The leaf-spine docs quote them.
func (ls *LeafSpine) TorConfig(r int) string { return ls.routers[ls.Tors[r]].conf }

// SpineConfig is the spine's bird.conf.
func (ls *LeafSpine) SpineConfig() string { return ls.routers[ls.Spine].conf }

// torRouterConfig is ToR r's, for a BIRD or an FRR ToR.
func (ls *LeafSpine) torRouterConfig(r int) routerConfig {
	bird, peers := ls.birdTorConfig(r)
	peerAddr := peersOf(peers)
	if ls.Opts.unnumbered(r) {
		bird, peerAddr = ls.birdUnnumberedTorConfig(r)
	}
	cfg := routerConfig{
		bird: func() string { return bird },
		frr: func() (string, error) {
			if ls.Opts.unnumbered(r) {
				return ls.frrUnnumberedTorConfig(r)
			}
			return ls.frrTorConfig(r)
		},
		peerAddr: peerAddr,
		sessions: 2, // bgpd is ready with its two spine sessions
	}
	if ls.Opts.BFD {
		cfg.bfdd = func() string { return lsFRRBfddDebug + lsFRRBfddConfig }
	}
	return cfg
}

// spineRouterConfig is the spine's, always BIRD.
func (ls *LeafSpine) spineRouterConfig() routerConfig {
	bird, peers := ls.birdSpineConfig()
	return routerConfig{bird: func() string { return bird }, peerAddr: peersOf(peers)}
}

// peersOf looks protocol names up in peers.
func peersOf(peers map[string]netip.Addr) func(string) (netip.Addr, bool) {
	return func(protocol string) (netip.Addr, bool) {
		a, ok := peers[protocol]
		return a, ok
	}
}

// addRouters registers the spine and the ToRs, each with its config, before
// the links are made: an FRR ToR readies its links for bgpd
// (router.prepareLinks).
func (ls *LeafSpine) addRouters() error {
	if _, err := ls.addRouter(ls.Spine, RouterBIRD, ls.spineRouterConfig()); err != nil {
		return err
	}
	for r, ns := range ls.Tors {
		if _, err := ls.addRouter(ns, ls.Opts.TorRouter[r], ls.torRouterConfig(r)); err != nil {
			return fmt.Errorf("ToR %d: %w", r, err)
		}
	}
	return nil
}

// addRouter registers a router namespace's *Lab, with its own folder named
// like a Lab's (netlab-<id>-...) so that acquireLock's reapFRR finds the
// pid files of a crashed lab's FRR daemons.
func (ls *LeafSpine) addRouter(ns string, kind RouterKind, cfg routerConfig) (*lsRouter, error) {
	name := strings.TrimPrefix(ns, "mccm-"+ls.ID+"-")
	dir, err := os.MkdirTemp("", "netlab-"+ls.ID+"-"+name+"-")
	if err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	rt := &lsRouter{routerNS: newRouterNS(ns, dir, kind, cfg)}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.cl.closed {
		_ = os.RemoveAll(dir)
		return nil, errors.New("lab closed")
	}
	ls.routers[ns] = rt
	if rt.conf, err = rt.rt.config(); err != nil {
		return nil, err
	}
	return rt, nil
}

// router is the router of namespace ns (the spine or a ToR).
func (ls *LeafSpine) router(ns string) (*lsRouter, error) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	rt := ls.routers[ns]
	if rt == nil {
		return nil, fmt.Errorf("netlab leaf-spine: %q is not a router namespace of the lab", ns)
	}
	return rt, nil
}

// startRouters starts the ToRs, then the spine: the spine's sessions then
// find the ToRs listening.
func (ls *LeafSpine) startRouters() error {
	for r, ns := range ls.Tors {
		if err := ls.routers[ns].rt.start(); err != nil {
			return fmt.Errorf("ToR %d: %w", r, err)
		}
	}
	if err := ls.routers[ls.Spine].rt.start(); err != nil {
		return fmt.Errorf("spine: %w", err)
	}
	return nil
}

// LeafSpineConfigs renders the configs a lab with opts would run, without
// starting it (no root needed): each ToR's (BIRD's bird.conf or FRR's bgpd
// config) and the spine's bird.conf. A docs test can compare the leaf-spine
// guide's examples with them.
func LeafSpineConfigs(opts LeafSpineOptions) (tors [2]string, spine string, err error) {
	if err := opts.defaults(); err != nil {
		return tors, "", fmt.Errorf("netlab leaf-spine options: %w", err)
	}
	ls := &LeafSpine{Opts: opts}
	for r := range ls.Racks {
		ls.Racks[r] = make([]string, opts.NodesPerRack)
	}
	for r := range ls.Tors {
		if tors[r], err = newRouter(opts.TorRouter[r], nil, ls.torRouterConfig(r)).config(); err != nil {
			return tors, "", err
		}
	}
	spine, _ = ls.birdSpineConfig()
	return tors, spine, nil
}
