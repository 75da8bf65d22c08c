package netlab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/metal-ccm/metal-ccm/test/framework"
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

// Interface names inside the leaf-spine namespaces (a namespace has its own
// names, so they are short and fixed; namespaces carry the lab's id).
const (
	lsUplink      = "uplink" // a ToR's link to the spine
	lsSpineClient = "client" // the spine's link to the client
)

// lsSpineTorLink is the spine's link to ToR r.
func lsSpineTorLink(r int) string { return fmt.Sprintf("tor%d", r) }

// lsNodePort is the ToR's bridge port of node i of its rack.
func lsNodePort(i int) string { return fmt.Sprintf("n%d", i) }

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
		} else if k != RouterBIRD && k != RouterFRR {
			return fmt.Errorf("ToR %d router %q is neither %q nor %q", r, k, RouterBIRD, RouterFRR)
		}
		if o.TorRouter[r] == RouterFRR {
			if err := checkFRRPassword(o.Password); err != nil {
				return err
			}
		}
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
	// routers are the spine and the ToRs, each as a *Lab that holds only
	// the router's namespace, folder, kind and daemons, so that Lab's
	// router code (birdc, vtysh, FRR daemons, kernel routes, logs, stop by
	// PID) serves here too. Only the fields those methods use are set.
	routers  map[string]*lsRouter
	lock     *os.File
	cl       closing
	savedLog string
}

// lsRouter is one router of the lab.
type lsRouter struct {
	lab  *Lab
	conf string // the config it runs (BIRD's or FRR's bgpd's)
	// peers maps BIRD protocol names to neighbor addresses.
	peers map[string]netip.Addr
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
	// Lab.Close of a router's *Lab stops its daemons by PID and removes its
	// folder; it owns no namespace or link.
	for _, ns := range ls.routerOrder() {
		if rt := ls.routers[ns]; rt != nil {
			errs = append(errs, rt.lab.Close())
			ls.savedLog += routerLogHeader(ns, rt) + rt.lab.RouterLog() + "\n"
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
	return fmt.Sprintf("=== %s (%s) ===\n", ns, rt.lab.Opts.Router)
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
			b.WriteString(routerLogHeader(ns, rt) + rt.lab.RouterLog() + "\n")
		}
	}
	return b.String()
}

// --- addresses ---

// lsAddr is host number host of 198.18.<net>.0/24, or of 2001:db8:<net>::/64
// written the same way in decimal digits (.11 is ::11), as segmentAddr.
func lsAddr(f Family, net, host int) netip.Addr { return segmentAddr(f, net, host) }

// LeafSpineNodeAddr is the address of node i of rack r on its rack's
// subnet (198.18.3r.11+i, 2001:db8:3r::11+i).
func LeafSpineNodeAddr(f Family, r, i int) netip.Addr { return lsAddr(f, 30+r, 11+i) }

// LeafSpineNodeSubnet is rack r's node subnet (198.18.3r.0/24,
// 2001:db8:3r::/64).
func LeafSpineNodeSubnet(f Family, r int) netip.Prefix {
	if f == IPv6 {
		return netip.PrefixFrom(lsAddr(f, 30+r, 0), 64)
	}
	return netip.PrefixFrom(lsAddr(f, 30+r, 0), 24)
}

// LeafSpineTorAddr is ToR r's address on its rack's subnet: its nodes'
// gateway and BGP neighbor.
func LeafSpineTorAddr(f Family, r int) netip.Addr { return lsAddr(f, 30+r, 1) }

// LeafSpineTorUplinkAddr is ToR r's address on its link to the spine: the
// next hop of the spine's routes through it.
func LeafSpineTorUplinkAddr(f Family, r int) netip.Addr { return lsUplinkAddr(f, r, 2) }

// LeafSpineSpineAddr is the spine's address on its link to ToR r.
func LeafSpineSpineAddr(f Family, r int) netip.Addr { return lsUplinkAddr(f, r, 1) }

// lsUplinkAddr is host h (1 spine, 2 ToR) of the link of ToR r:
// 198.18.24.(4r+h)/30, 2001:db8:24:r::h/64.
func lsUplinkAddr(f Family, r, h int) netip.Addr {
	if f == IPv6 {
		return netip.MustParseAddr(fmt.Sprintf("2001:db8:24:%d::%d", r, h))
	}
	return netip.AddrFrom4([4]byte{198, 18, 24, byte(4*r + h)}) //nolint:gosec // r is 0 or 1, h 1 or 2
}

// lsUplinkBits is the prefix length of a ToR–spine link.
func lsUplinkBits(f Family) int {
	if f == IPv6 {
		return 64
	}
	return 30
}

// LeafSpineClientAddr is the client's address (198.18.25.2, 2001:db8:25::2).
func LeafSpineClientAddr(f Family) netip.Addr { return lsAddr(f, 25, 2) }

// LeafSpineClientGateway is the spine's address on the client link.
func LeafSpineClientGateway(f Family) netip.Addr { return lsAddr(f, 25, 1) }

// NodeNamespace is the namespace of node i of rack r.
func (ls *LeafSpine) NodeNamespace(r, i int) string { return ls.Racks[r][i] }

// NodeAddrs are the addresses of family f of rack r's nodes, by index.
func (ls *LeafSpine) NodeAddrs(f Family, r int) []netip.Addr {
	out := make([]netip.Addr, len(ls.Racks[r]))
	for i := range out {
		out[i] = LeafSpineNodeAddr(f, r, i)
	}
	return out
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

// TorConfig is the config ToR r runs: BIRD's bird.conf, or FRR's bgpd
// config (zebra runs with defaults). The leaf-spine docs quote them.
func (ls *LeafSpine) TorConfig(r int) string { return ls.routers[ls.Tors[r]].conf }

// SpineConfig is the spine's bird.conf.
func (ls *LeafSpine) SpineConfig() string { return ls.routers[ls.Spine].conf }

// --- build ---

// build makes the namespaces and links and starts the routers; on error
// Close undoes what exists.
func (ls *LeafSpine) build() error {
	all := []string{ls.Spine, ls.Client, ls.Tors[0], ls.Tors[1]}
	all = append(all, ls.Racks[0]...)
	all = append(all, ls.Racks[1]...)
	for _, ns := range all {
		if err := ls.addNamespace(ns); err != nil {
			return err
		}
	}
	for _, ns := range []string{ls.Spine, ls.Tors[0], ls.Tors[1]} {
		if _, err := output("ip", "netns", "exec", ns, "sysctl", "-q", "-w",
			"net.ipv4.ip_forward=1",
			"net.ipv6.conf.all.forwarding=1",
			// Hash on ports too, so connections from the one client spread
			// over the next hops of an ECMP route.
			"net.ipv4.fib_multipath_hash_policy=1",
			"net.ipv6.fib_multipath_hash_policy=1"); err != nil {
			return err
		}
	}
	// Policy 1 takes the hash a packet already carries, and across veths a
	// packet keeps the one its socket gave it: the ToR would hash each flow
	// as the spine did, and the flows the spine sends to a ToR would all
	// take the same node there (polarization). The ToRs hash the 5-tuple
	// afresh instead (policy 3 with these fields: source and destination
	// address, protocol, source and destination port; Linux 5.12). An
	// older kernel keeps policy 1 at the ToRs: the spine still spreads
	// flows over both racks, but a ToR sends all of them to one node.
	for _, ns := range ls.Tors {
		_, _ = output("ip", "netns", "exec", ns, "sysctl", "-q", "-w",
			"net.ipv4.fib_multipath_hash_fields=0x0037",
			"net.ipv4.fib_multipath_hash_policy=3",
			"net.ipv6.fib_multipath_hash_fields=0x0037",
			"net.ipv6.fib_multipath_hash_policy=3")
	}
	if err := ls.buildClient(); err != nil {
		return err
	}
	for r := range ls.Tors {
		if err := ls.buildRack(r); err != nil {
			return err
		}
	}
	// ToRs first: the spine's sessions then find them listening.
	for r := range ls.Tors {
		if err := ls.startTor(r); err != nil {
			return fmt.Errorf("ToR %d: %w", r, err)
		}
	}
	if err := ls.startSpine(); err != nil {
		return fmt.Errorf("spine: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), lsStartTimeout)
	defer cancel()
	for r := range ls.Tors {
		if err := ls.WaitEstablished(ctx, ls.Spine, LeafSpineTorUplinkAddr(IPv4, r), LeafSpineTorUplinkAddr(IPv6, r)); err != nil {
			return fmt.Errorf("spine sessions with ToR %d: %w", r, err)
		}
	}
	return nil
}

func (ls *LeafSpine) addNamespace(ns string) error { return addNamespace(&ls.mu, &ls.namespaces, ns) }

// lsConfigureLink gives dev in ns the prefixes' addresses and brings it up,
// without IPv6 link-local addresses (as configureLink).
func lsConfigureLink(ns, dev string, prefixes ...netip.Prefix) error {
	cmds := [][]string{{"link", "set", "dev", dev, "addrgenmode", "none"}}
	for _, p := range prefixes {
		if p.Addr().Is4() {
			cmds = append(cmds, []string{"addr", "add", p.String(), "dev", dev})
		} else {
			cmds = append(cmds, []string{"-6", "addr", "add", p.String(), "dev", dev, "nodad"})
		}
	}
	cmds = append(cmds, []string{"link", "set", "dev", dev, "up"})
	for _, c := range cmds {
		if err := ipn(ns, c...); err != nil {
			return err
		}
	}
	return nil
}

// lsNeighbors gives the two ends of an IPv6 link permanent neighbour
// entries for each other's address: the links have no link-local addresses,
// and without one the kernel cannot solicit a neighbour for a packet whose
// source is not on the outgoing link (a forwarded packet, a reply from a VIP
// on lo). See Lab.staticNeighbors.
func lsNeighbors(nsA, devA string, addrA netip.Addr, nsB, devB string, addrB netip.Addr) error {
	macA, err := linkMAC(nsA, devA)
	if err != nil {
		return err
	}
	macB, err := linkMAC(nsB, devB)
	if err != nil {
		return err
	}
	if err := ipn(nsA, "-6", "neigh", "replace", addrB.String(), "lladdr", macB, "dev", devA, "nud", "permanent"); err != nil {
		return err
	}
	return ipn(nsB, "-6", "neigh", "replace", addrA.String(), "lladdr", macA, "dev", devB, "nud", "permanent")
}

// veth makes a veth pair between two namespaces.
func veth(nsA, devA, nsB, devB string) error {
	return ipn(nsA, "link", "add", devA, "type", "veth", "peer", "name", devB, "netns", nsB)
}

func (ls *LeafSpine) buildClient() error {
	if err := veth(ls.Client, nsLink, ls.Spine, lsSpineClient); err != nil {
		return err
	}
	if err := lsConfigureLink(ls.Spine, lsSpineClient,
		netip.PrefixFrom(LeafSpineClientGateway(IPv4), 24), netip.PrefixFrom(LeafSpineClientGateway(IPv6), 64)); err != nil {
		return err
	}
	if err := lsConfigureLink(ls.Client, nsLink,
		netip.PrefixFrom(LeafSpineClientAddr(IPv4), 24), netip.PrefixFrom(LeafSpineClientAddr(IPv6), 64)); err != nil {
		return err
	}
	if err := lsNeighbors(ls.Spine, lsSpineClient, LeafSpineClientGateway(IPv6), ls.Client, nsLink, LeafSpineClientAddr(IPv6)); err != nil {
		return err
	}
	if err := ipn(ls.Client, defaultRouteArgs(LeafSpineClientGateway(IPv4))...); err != nil {
		return err
	}
	return ipn(ls.Client, defaultRouteArgs(LeafSpineClientGateway(IPv6))...)
}

// buildRack makes ToR r's uplink to the spine, its bridge with the rack's
// subnet, and the rack's nodes on it with the ToR as their gateway.
func (ls *LeafSpine) buildRack(r int) error {
	tor := ls.Tors[r]
	if err := veth(tor, lsUplink, ls.Spine, lsSpineTorLink(r)); err != nil {
		return err
	}
	for _, f := range []Family{IPv4, IPv6} {
		if err := lsConfigureLink(ls.Spine, lsSpineTorLink(r), netip.PrefixFrom(LeafSpineSpineAddr(f, r), lsUplinkBits(f))); err != nil {
			return err
		}
		if err := lsConfigureLink(tor, lsUplink, netip.PrefixFrom(LeafSpineTorUplinkAddr(f, r), lsUplinkBits(f))); err != nil {
			return err
		}
	}
	if err := lsNeighbors(ls.Spine, lsSpineTorLink(r), LeafSpineSpineAddr(IPv6, r), tor, lsUplink, LeafSpineTorUplinkAddr(IPv6, r)); err != nil {
		return err
	}

	if err := ipn(tor, "link", "add", bridgeName, "type", "bridge", "mcast_snooping", "0"); err != nil {
		return err
	}
	// A bridge takes the lowest MAC of its ports unless its own is set, and
	// a change flushes its neighbour entries, the permanent ones too: pin it.
	mac, err := linkMAC(tor, bridgeName)
	if err != nil {
		return err
	}
	if err := ipn(tor, "link", "set", "dev", bridgeName, "address", mac); err != nil {
		return err
	}
	if err := lsConfigureLink(tor, bridgeName,
		netip.PrefixFrom(LeafSpineTorAddr(IPv4, r), 24), netip.PrefixFrom(LeafSpineTorAddr(IPv6, r), 64)); err != nil {
		return err
	}
	if ls.Opts.TorRouter[r] == RouterFRR {
		// bgpd brings up no IPv6 session without a link-local address on
		// the interface of the session address (see frrLinkLocal): on the
		// bridge for the nodes, on the uplink for the spine.
		for _, dev := range []string{bridgeName, lsUplink} {
			if err := ipn(tor, "-6", "addr", "add", "fe80::1/64", "dev", dev, "nodad"); err != nil {
				return err
			}
		}
	}
	for i, ns := range ls.Racks[r] {
		port := lsNodePort(i)
		if err := veth(ns, nsLink, tor, port); err != nil {
			return err
		}
		if err := ipn(tor, "link", "set", "dev", port, "addrgenmode", "none"); err != nil {
			return err
		}
		if err := ipn(tor, "link", "set", "dev", port, "master", bridgeName, "up"); err != nil {
			return err
		}
		if err := lsConfigureLink(ns, nsLink,
			netip.PrefixFrom(LeafSpineNodeAddr(IPv4, r, i), 24), netip.PrefixFrom(LeafSpineNodeAddr(IPv6, r, i), 64)); err != nil {
			return err
		}
		if err := lsNeighbors(tor, bridgeName, LeafSpineTorAddr(IPv6, r), ns, nsLink, LeafSpineNodeAddr(IPv6, r, i)); err != nil {
			return err
		}
		if err := ipn(ns, defaultRouteArgs(LeafSpineTorAddr(IPv4, r))...); err != nil {
			return err
		}
		if err := ipn(ns, defaultRouteArgs(LeafSpineTorAddr(IPv6, r))...); err != nil {
			return err
		}
	}
	return nil
}

// newRouter registers a router namespace's *Lab, with its own folder named
// like a Lab's (netlab-<id>-...) so that acquireLock's reapFRR finds the
// pid files of a crashed lab's FRR daemons.
func (ls *LeafSpine) newRouter(ns string, kind RouterKind, peers map[string]netip.Addr) (*lsRouter, error) {
	name := strings.TrimPrefix(ns, "mccm-"+ls.ID+"-")
	dir, err := os.MkdirTemp("", "netlab-"+ls.ID+"-"+name+"-")
	if err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	rt := &lsRouter{
		lab:   &Lab{ID: ls.ID, Router: ns, Client: ls.Client, Dir: dir, Opts: Options{Router: kind}},
		peers: peers,
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.cl.closed {
		_ = os.RemoveAll(dir)
		return nil, errors.New("lab closed")
	}
	ls.routers[ns] = rt
	return rt, nil
}

// lsStartTimeout bounds the wait for the ToR–spine sessions in Start.
const lsStartTimeout = 30 * time.Second

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

// --- observation ---

// Route returns the route of prefix that the BGP daemon of router namespace
// ns (the spine or a ToR) installed in its kernel, if any.
func (ls *LeafSpine) Route(ns string, prefix netip.Prefix) (Route, bool, error) {
	rt, err := ls.router(ns)
	if err != nil {
		return Route{}, false, err
	}
	return rt.lab.Route(prefix)
}

// WaitRoute polls until the kernel route of prefix in router namespace ns
// has exactly the wanted next hops (in any order); with none, until there
// is no route.
func (ls *LeafSpine) WaitRoute(ctx context.Context, ns string, prefix netip.Prefix, wantNextHops []netip.Addr) error {
	rt, err := ls.router(ns)
	if err != nil {
		return err
	}
	if err := rt.lab.WaitRoute(ctx, prefix, wantNextHops); err != nil {
		return fmt.Errorf("%s: %w", ns, err)
	}
	return nil
}

// SessionStates maps each BGP neighbor address of router namespace ns to
// its session's state ("Established", "Active", ...; the same words for
// BIRD and FRR). An FRR ToR accepts its nodes by listen range: a node
// appears once it has connected.
func (ls *LeafSpine) SessionStates(ns string) (map[netip.Addr]string, error) {
	rt, err := ls.router(ns)
	if err != nil {
		return nil, err
	}
	if rt.lab.Opts.Router == RouterFRR {
		return rt.lab.frrSessionStates()
	}
	return rt.birdSessionStates()
}

// WaitEstablished polls until router namespace ns has established sessions
// with all the given neighbor addresses.
func (ls *LeafSpine) WaitEstablished(ctx context.Context, ns string, addrs ...netip.Addr) error {
	err := waitEstablished(ctx, func() (map[netip.Addr]string, error) { return ls.SessionStates(ns) }, addrs)
	if err != nil {
		return fmt.Errorf("netlab leaf-spine: %s: sessions with %v: %w", ns, addrs, err)
	}
	return nil
}

// BGPPaths are the paths router namespace ns holds in its BGP table for
// exactly prefix, with the neighbor each came from (a ToR also holds the
// spine's path of a prefix its nodes announce, when the other rack announces
// it too).
func (ls *LeafSpine) BGPPaths(ns string, prefix netip.Prefix) ([]Path, error) {
	rt, err := ls.router(ns)
	if err != nil {
		return nil, err
	}
	if rt.lab.Opts.Router == RouterFRR {
		return rt.lab.BGPPaths(prefix)
	}
	out, err := rt.lab.Birdc("show", "route", prefix.String(), "all")
	if err != nil {
		if strings.Contains(out, "Network not found") {
			return nil, nil // birdc's answer (and exit code 1) for no route
		}
		return nil, fmt.Errorf("%w: %s", err, out)
	}
	return parseBirdPaths(out, rt.peerAddr)
}

// Birdc runs a birdc command against the BIRD of router namespace ns.
func (ls *LeafSpine) Birdc(ns string, args ...string) (string, error) {
	rt, err := ls.router(ns)
	if err != nil {
		return "", err
	}
	return rt.lab.Birdc(args...)
}

// Vtysh runs vtysh commands against the FRR of router namespace ns.
func (ls *LeafSpine) Vtysh(ns string, commands ...string) (string, error) {
	rt, err := ls.router(ns)
	if err != nil {
		return "", err
	}
	return rt.lab.Vtysh(commands...)
}

// RouterPID is the PID of the BGP daemon (bird or bgpd) of router namespace
// ns, or 0.
func (ls *LeafSpine) RouterPID(ns string) int {
	rt, err := ls.router(ns)
	if err != nil {
		return 0
	}
	return rt.lab.RouterPID()
}

// Exec runs a command in namespace ns and returns its standard output.
func (ls *LeafSpine) Exec(ns string, args ...string) (string, error) {
	return execIn(context.Background(), ns, args...)
}

// RunInNamespace runs fn in network namespace ns (framework.RunInNetNS).
func (ls *LeafSpine) RunInNamespace(ns string, fn func() error) error {
	return framework.RunInNetNS(ns, fn)
}

// ClientGet does an HTTP GET of rawURL from the client namespace, on a new
// connection, and returns the body (Lab.ClientGet).
func (ls *LeafSpine) ClientGet(ctx context.Context, rawURL string) (string, error) {
	rt, err := ls.router(ls.Spine)
	if err != nil {
		return "", err
	}
	return rt.lab.ClientGet(ctx, rawURL)
}

// peerAddr is the neighbor address of a BIRD protocol of this router.
func (rt *lsRouter) peerAddr(protocol string) (netip.Addr, bool) {
	a, ok := rt.peers[protocol]
	return a, ok
}

// SetNodeLink sets the ToR end of the link of node i of rack r down or up.
// Down, the node is as if powered off for the network (as Lab.SetNodeLink).
func (ls *LeafSpine) SetNodeLink(r, i int, up bool) error {
	if r < 0 || r >= len(ls.Racks) || i < 0 || i >= len(ls.Racks[r]) {
		return fmt.Errorf("netlab leaf-spine: no node %d in rack %d", i, r)
	}
	return setLink(ls.Tors[r], lsNodePort(i), up)
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
		if opts.TorRouter[r] == RouterFRR {
			if tors[r], err = ls.frrTorConfig(r); err != nil {
				return tors, "", err
			}
			continue
		}
		tors[r], _ = ls.birdTorConfig(r)
	}
	spine, _ = ls.birdSpineConfig()
	return tors, spine, nil
}

// ServeVIP puts the vips on the loopback of node i of rack r (as kube-proxy
// would take their traffic) and answers HTTP on port 80 of each with
// "r<r>n<i>", until the lab closes.
func (ls *LeafSpine) ServeVIP(r, i int, vips ...netip.Addr) error {
	ns, name := ls.NodeNamespace(r, i), fmt.Sprintf("r%dn%d", r, i)
	for _, v := range vips {
		if err := checkAddr(v); err != nil {
			return fmt.Errorf("netlab leaf-spine serve VIP: %w", err)
		}
		args := []string{"addr", "add", HostPrefix(v).String(), "dev", "lo"}
		if v.Is6() {
			args = append([]string{"-6"}, append(args, "nodad")...)
		}
		if err := ipn(ns, args...); err != nil {
			return err
		}
		ln, err := framework.ListenInNetNS(ns, "tcp", netip.AddrPortFrom(v, 80).String())
		if err != nil {
			return fmt.Errorf("netlab leaf-spine serve VIP: %w", err)
		}
		srv := &http.Server{
			Handler:           http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, name) }),
			ReadHeaderTimeout: 5 * time.Second,
		}
		go func() { _ = srv.Serve(ln) }()
		if err := ls.AddCloser(func() { _ = srv.Close() }); err != nil {
			return err
		}
	}
	return nil
}
