package netlab

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
)

// The leaf-spine lab (issue 15): two racks, each a ToR router with its own
// node subnet behind a bridge and NodesPerRack node namespaces; a spine
// router peering with both ToRs over point-to-point links and installing
// ECMP routes; a client namespace behind the spine. A BGP speaker in a node
// namespace (the node agent, its own process) peers only with its own ToR,
// next hop itself: one path per node and session, so a ToR needs no ADD-PATH.
//
//	client ── spine ──┬── tor0 ── br0 ── rack 0 nodes
//	                  └── tor1 ── br0 ── rack 1 nodes
//
// Address plan, all in 198.18.24.0/21 and 2001:db8::/32, away from the
// one-segment lab (198.18.10/24, .20/24), the pools (198.18.100+), the
// bench's fake nodes (198.18.32.0/19, 198.18.96.0/22) and the chaos pools
// (198.18.44.0/22, .48):
//
//	rack r nodes:     198.18.3r.0/24, 2001:db8:3r::/64 (r = 0, 1; ToR .1/::1, node i .11+i/::11+i)
//	ToR r ↔ spine:    198.18.24.4r/30 (spine .4r+1, ToR .4r+2), 2001:db8:24:r::/64 (spine ::1, ToR ::2)
//	spine ↔ client:   198.18.25.0/24, 2001:db8:25::/64 (spine .1/::1, client .2/::2)
//	free for tests:   198.18.26.0/24, 2001:db8:26::/64 (e.g. an anycast VIP)
//
// The lab uses no link in the host namespace: nothing of it is reachable
// from the host, and nothing of the host from it.

// Default ASNs of the leaf-spine lab. The nodes of both racks share
// NodeASN (default DefaultSpeakerASN): the spine sees paths like
// "65001 64512" and "65002 64512", with no loop, and a ToR sends nothing
// to its nodes, so no node ever sees its own ASN in a path. eBGP loop
// prevention acts at the ToRs and the spine only.
const (
	DefaultSpineASN = 65000
	DefaultTorASN0  = 65001
	DefaultTorASN1  = 65002
)

// maxNodesPerRack bounds the node host numbers (.11 upwards in a /24).
const maxNodesPerRack = 100

// LeafSpineOptions shape a leaf-spine lab. The zero value gives two BIRD
// ToRs, two nodes per rack, ToR 0 with ADD-PATH receive and ToR 1 without.
type LeafSpineOptions struct {
	// NodesPerRack is the number of node namespaces per rack (default 2).
	NodesPerRack int
	// SpineASN is the spine's ASN (default 65000).
	SpineASN uint32
	// TorASN are the ToRs' ASNs (default 65001, 65002).
	TorASN [2]uint32
	// NodeASN is the ASN the ToRs expect from every node (default
	// DefaultSpeakerASN).
	NodeASN uint32
	// TorRouter is the BGP implementation of each ToR (default RouterBIRD);
	// the spine always runs BIRD.
	TorRouter [2]RouterKind
	// AddPathTor is the ToR that negotiates ADD-PATH receive with its nodes;
	// the other one does not (default 0: ToR 1 has none). -1: neither.
	// (A "NoAddPathTor, default 1" field cannot tell 0 from unset.) FRR 8.4
	// cannot refuse ADD-PATH receive (disable-addpath-rx came later): an FRR
	// ToR always has it, whatever this says; see NoAddPathTor.
	AddPathTor int
	// Password is the TCP MD5 password of the node sessions ("" = none).
	Password string
	// BFD runs BFD on the ToRs' node sessions (BIRD's bfd protocol, FRR's
	// bfdd), 300 ms × 3 as LeafSpineBFD gives the agents.
	BFD bool
	// Unnumbered makes the racks it marks unnumbered: their ToR meets each
	// node on a link of its own and peers with it between link-local
	// addresses (leafspine_unnumbered.go), FRR by interface, BIRD by a
	// link-local neighbour range per link; BFD (with BFD) between the same
	// link-local addresses. No password.
	Unnumbered [2]bool
	// Beside, when set, is a running one-segment lab of this process: the
	// leaf-spine lab is built beside it, under the machine-wide lock that
	// lab holds, instead of waiting for it to close (which would never
	// happen). The two do not meet: the leaf-spine lab has no link in the
	// host namespace and none of the other's addresses. Close the
	// leaf-spine lab first.
	Beside *Lab
}

func (o *LeafSpineOptions) defaults() error {
	if o.NodesPerRack == 0 {
		o.NodesPerRack = 2
	}
	if o.NodesPerRack < 1 || o.NodesPerRack > maxNodesPerRack {
		return fmt.Errorf("nodes per rack %d out of range 1..%d", o.NodesPerRack, maxNodesPerRack)
	}
	if o.SpineASN == 0 {
		o.SpineASN = DefaultSpineASN
	}
	if o.TorASN[0] == 0 {
		o.TorASN[0] = DefaultTorASN0
	}
	if o.TorASN[1] == 0 {
		o.TorASN[1] = DefaultTorASN1
	}
	if o.NodeASN == 0 {
		o.NodeASN = DefaultSpeakerASN
	}
	for r, k := range o.TorRouter {
		if k == "" {
			o.TorRouter[r] = RouterBIRD
		} else if !slices.Contains(RouterKinds, k) {
			return fmt.Errorf("ToR %d router %q is none of %q", r, k, RouterKinds)
		}
		if err := o.TorRouter[r].checkPassword(o.Password); err != nil {
			return err
		}
	}
	if err := o.checkUnnumbered(); err != nil {
		return err
	}
	if o.AddPathTor < -1 || o.AddPathTor > 1 {
		return fmt.Errorf("add-path ToR %d is neither 0, 1 nor -1", o.AddPathTor)
	}
	asns := []uint32{o.SpineASN, o.TorASN[0], o.TorASN[1]}
	if asns[0] == asns[1] || asns[0] == asns[2] || asns[1] == asns[2] || slices.Contains(asns, o.NodeASN) {
		return fmt.Errorf("ASNs must differ: spine %d, ToRs %v, nodes %d", o.SpineASN, o.TorASN, o.NodeASN)
	}
	return nil
}

// addPath reports whether ToR r is configured with ADD-PATH receive.
func (o *LeafSpineOptions) addPath(r int) bool { return o.AddPathTor == r }

// available says why a lab with these options cannot run here, or nil.
func (o *LeafSpineOptions) available() error {
	if err := Available(); err != nil { // the spine is BIRD
		return err
	}
	for _, k := range o.TorRouter {
		if err := k.Available(); err != nil {
			return err
		}
	}
	return nil
}

// LeafSpine is a running leaf-spine lab. Its methods are safe for
// concurrent use.
type LeafSpine struct {
	// ID is the random part of every name the lab gives.
	ID string
	// Spine, Client and Tors are namespace names.
	Spine  string
	Client string
	Tors   [2]string
	// Racks are the node namespace names of each rack, by node index.
	Racks [2][]string
	// Opts are the options with defaults filled in.
	Opts LeafSpineOptions

	mu         sync.Mutex
	namespaces []string // created, in order
	// routers are the spine and the ToRs by namespace (lsRouter).
	routers  map[string]*lsRouter
	lock     *os.File
	cl       closing
	savedLog string
}

// NewLeafSpine builds a leaf-spine lab for a test and closes it in
// t.Cleanup, also when the test fails (then logging the routers' logs). It
// skips the test, saying why, when the lab cannot run here.
func NewLeafSpine(t testing.TB, opts LeafSpineOptions) *LeafSpine {
	t.Helper()
	if err := opts.defaults(); err != nil {
		t.Fatalf("netlab leaf-spine options: %v", err)
	}
	if err := opts.available(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	ls, err := StartLeafSpine(opts)
	if err != nil {
		t.Fatalf("netlab: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("netlab leaf-spine router logs:\n%s", ls.RouterLogs())
		}
		if err := ls.Close(); err != nil {
			t.Errorf("netlab: %v", err)
		}
	})
	return ls
}

// StartLeafSpine builds a leaf-spine lab and returns once the ToR–spine
// sessions are established; the caller must Close it. It waits for other
// labs on this machine (Start's lock) to close first, unless it is built
// beside one (LeafSpineOptions.Beside).
func StartLeafSpine(opts LeafSpineOptions) (*LeafSpine, error) {
	if err := opts.defaults(); err != nil {
		return nil, fmt.Errorf("netlab leaf-spine options: %w", err)
	}
	var lock *os.File
	if opts.Beside == nil {
		var err error
		if lock, err = acquireLock(); err != nil {
			return nil, err
		}
	} else if opts.Beside.isClosed() {
		return nil, errors.New("netlab leaf-spine start: the lab to run beside is closed")
	}
	id, err := randomID()
	if err != nil {
		if lock != nil {
			_ = lock.Close()
		}
		return nil, err
	}
	prefix := "mccm-" + id + "-"
	ls := &LeafSpine{
		ID: id, Opts: opts, lock: lock,
		Spine: prefix + "spine", Client: prefix + "client",
		Tors:    [2]string{prefix + "tor0", prefix + "tor1"},
		routers: map[string]*lsRouter{},
	}
	for r := range ls.Racks {
		for i := range opts.NodesPerRack {
			ls.Racks[r] = append(ls.Racks[r], fmt.Sprintf("%sr%dn%d", prefix, r, i))
		}
	}
	if err := ls.build(); err != nil {
		return nil, errors.Join(fmt.Errorf("netlab leaf-spine start: %w", err), ls.Close())
	}
	return ls, nil
}

// Close stops the routers by PID and deletes exactly the namespaces and
// folders the lab created. It is safe to call more than once, and after a
// failed start.
func (ls *LeafSpine) Close() error {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if !ls.cl.close() {
		return nil
	}
	var errs []error
	// A router's close stops its daemons by PID and removes its folder;
	// the namespaces go below.
	for _, ns := range ls.routerOrder() {
		if rt := ls.routers[ns]; rt != nil {
			errs = append(errs, rt.closeRouter())
			ls.savedLog += routerLogHeader(ns, rt) + rt.RouterLog() + "\n"
		}
	}
	errs = append(errs, deleteNamespaces(ls.namespaces)...)
	if ls.lock != nil {
		_ = ls.lock.Close()
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("netlab leaf-spine close: %w", err)
	}
	return nil
}

// AddCloser registers fn to run first in Close (before the routers stop),
// for processes a test starts in the lab's namespaces.
func (ls *LeafSpine) AddCloser(fn func()) error {
	return ls.cl.add(&ls.mu, fn)
}

// routerOrder is the router namespaces, spine first.
func (ls *LeafSpine) routerOrder() []string { return []string{ls.Spine, ls.Tors[0], ls.Tors[1]} }

func routerLogHeader(ns string, rt *lsRouter) string {
	return fmt.Sprintf("=== %s (%s) ===\n", ns, rt.kind)
}

// RouterLogs are the logs of the spine and ToR daemons (kept after Close).
func (ls *LeafSpine) RouterLogs() string {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.cl.closed {
		return ls.savedLog
	}
	var b strings.Builder
	for _, ns := range ls.routerOrder() {
		if rt := ls.routers[ns]; rt != nil {
			b.WriteString(routerLogHeader(ns, rt) + rt.RouterLog() + "\n")
		}
	}
	return b.String()
}

// NoAddPathTor is the ToR that does not negotiate ADD-PATH receive with its
// nodes, or -1 if both do (an FRR ToR always does, see AddPathTor).
func (ls *LeafSpine) NoAddPathTor() int {
	for r := range ls.Tors {
		if !ls.Opts.addPath(r) && ls.Opts.TorRouter[r] == RouterBIRD {
			return r
		}
	}
	return -1
}
