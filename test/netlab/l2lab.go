package netlab

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/metal-ccm/metal-ccm/pkg/rendezvous"
)

// The L2 lab: one Ethernet segment and no router, for L2 announcement of
// LoadBalancer addresses (a node answers ARP and Neighbor Solicitations for
// an address of the segment). A Linux bridge in a "switch" namespace is the
// switch; each node namespace and the client namespace is attached to it by
// a veth ("eth0" inside, "n<i>" and "client" on the switch).
//
//	node0 ──┐
//	node1 ──┼── switch (br0) ── client
//	node2 ──┘
//
// Address plan, one subnet per family: 198.18.125.0/24 and
// 2001:db8:125::/64. Nothing else in the repository uses them (the router
// lab has 198.18.10/24 and .20/24, the leaf-spine lab 198.18.24.0/21 and
// .30/.31, the bench's fake nodes, pools and ClusterIPs 198.18.32.0/19,
// .64.0/19, .96.0/22, .128.0/18 and .192.0/18, the tests' pools .100 to
// .120 and .150 to .208, the bench's ToR scenario .124, each with the same
// third group in 2001:db8::/32).
//
//	client:        198.18.125.2, 2001:db8:125::2   (L2ClientAddr)
//	node i:        198.18.125.11+i, 2001:db8:125::11+i   (L2NodeAddr)
//	for tests:     198.18.125.200+i, 2001:db8:125::200+i   (L2VIP; no one holds them)
//
// The switch has no address. IPv6 runs without link-local addresses (every
// address stays in the lab ranges; L2Options.LinkLocal gives the client
// and the nodes the kernel's, on their link only) and without DAD; the client keeps the
// kernel's default neighbour settings (FlushClientNeighbors forgets what
// it learnt).
//
// The lab takes no machine-wide lock, unlike Start and StartLeafSpine: it
// has no link and no address in the host namespace, so two L2 labs, or an
// L2 lab and another lab, cannot collide; its namespace names carry a
// random per-lab prefix.

// l2MaxNodes bounds the node host numbers (.11 upwards, below the VIPs).
const l2MaxNodes = 100

// l2MaxVIPs bounds L2VIP's index (.200 to .254).
const l2MaxVIPs = 55

// Interface names of the L2 lab's switch namespace.
const l2ClientPort = "client" // the switch's port of the client

// l2NodePort is the switch's port of node i.
func l2NodePort(i int) string { return fmt.Sprintf("n%d", i) }

// l2Net is the third group of the L2 segment's addresses (198.18.125.0/24,
// 2001:db8:125::/64).
const l2Net = 125

// L2Options shape an L2 lab. The zero value gives 3 nodes.
type L2Options struct {
	// Nodes is the number of node namespaces (default 3, at most 100).
	Nodes int
	// LinkLocal gives the client's and the nodes' links the kernel's IPv6
	// link-local address (fe80::/64, on that link only), as every real
	// host has. Nodes that forward IPv6 (kube-proxy's DNAT to a pod on
	// another node) need it: Linux sends the Neighbor Solicitation for a
	// forwarded packet's next hop from the link's link-local address, and
	// sends none without one, so the node could not resolve the client.
	LinkLocal bool
}

func (o *L2Options) defaults() error {
	if o.Nodes == 0 {
		o.Nodes = 3
	}
	if o.Nodes < 1 || o.Nodes > l2MaxNodes {
		return fmt.Errorf("nodes %d out of range 1..%d", o.Nodes, l2MaxNodes)
	}
	return nil
}

// L2Lab is a running L2 lab. Its methods are safe for concurrent use.
type L2Lab struct {
	// ID is the random part of every name the lab gives.
	ID string
	// Switch, Client and Nodes are the namespace names.
	Switch string
	Client string
	Nodes  []string
	// Opts are the options with defaults filled in.
	Opts L2Options

	mu         sync.Mutex
	namespaces []string // created, in order
	cl         closing
}

// AvailableL2 reports why an L2 lab cannot run here (not root, ip missing),
// or nil. BlockBetweenNodes needs nft besides.
func AvailableL2() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("netlab needs root (euid %d)", os.Geteuid())
	}
	if _, err := output("ip", "-V"); err != nil {
		return fmt.Errorf("netlab needs ip (iproute2; run hack/install-deps.sh as root): %w", err)
	}
	return nil
}

// NewL2 builds an L2 lab for a test and closes it in t.Cleanup, also when
// the test fails. It skips the test, saying why, when the lab cannot run
// here.
func NewL2(t testing.TB, o L2Options) *L2Lab {
	t.Helper()
	if err := AvailableL2(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	l, err := StartL2(o)
	if err != nil {
		t.Fatalf("netlab: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("netlab: %v", err)
		}
	})
	return l
}

// StartL2 builds an L2 lab; the caller must Close it.
func StartL2(o L2Options) (*L2Lab, error) {
	if err := o.defaults(); err != nil {
		return nil, fmt.Errorf("netlab L2 options: %w", err)
	}
	id, err := randomID()
	if err != nil {
		return nil, err
	}
	prefix := "mccm-" + id + "-"
	l := &L2Lab{ID: id, Opts: o, Switch: prefix + "switch", Client: prefix + "client"}
	for i := range o.Nodes {
		l.Nodes = append(l.Nodes, fmt.Sprintf("%snode%d", prefix, i))
	}
	if err := l.build(); err != nil {
		return nil, errors.Join(fmt.Errorf("netlab L2 start: %w", err), l.Close())
	}
	return l, nil
}

// Close stops what the lab's helpers started (packet captures) and deletes
// exactly the namespaces the lab created, by name. It is safe to call more
// than once, and after a failed start.
func (l *L2Lab) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.cl.close() {
		return nil
	}
	if err := errors.Join(deleteNamespaces(l.namespaces)...); err != nil {
		return fmt.Errorf("netlab L2 close: %w", err)
	}
	return nil
}

// AddCloser registers fn to run first in Close, for what a test starts in
// the lab's namespaces. On a closed lab it runs fn at once and fails.
func (l *L2Lab) AddCloser(fn func()) error {
	return l.cl.add(&l.mu, fn)
}

// build makes the namespaces, the bridge and the links; on error Close
// undoes what exists.
func (l *L2Lab) build() error {
	for _, ns := range append([]string{l.Switch, l.Client}, l.Nodes...) {
		if err := addNamespace(&l.mu, &l.namespaces, ns); err != nil {
			return err
		}
	}
	sw, err := newSegment(l.Switch)
	if err != nil {
		return err
	}
	if err := configureLink(l.Switch, bridgeName); err != nil { // no address, no link-local
		return err
	}
	if err := l.attach(sw, l.Client, l2ClientPort, L2ClientAddr(IPv4), L2ClientAddr(IPv6)); err != nil {
		return fmt.Errorf("client: %w", err)
	}
	for i, ns := range l.Nodes {
		if err := l.attach(sw, ns, l2NodePort(i), L2NodeAddr(IPv4, i), L2NodeAddr(IPv6, i)); err != nil {
			return fmt.Errorf("node %d: %w", i, err)
		}
	}
	return nil
}

// attach links namespace ns to the switch sw at port, its eth0 with addrs
// (and the kernel's link-local address with Options.LinkLocal).
func (l *L2Lab) attach(sw segment, ns, port string, addrs ...netip.Addr) error {
	if err := sw.attach(ns, port); err != nil {
		return err
	}
	if !l.Opts.LinkLocal {
		return configureLink(ns, nsLink, addrs...)
	}
	// The kernel's link-local address, without DAD so that it is usable
	// at once.
	if _, err := execIn(context.Background(), ns, "sysctl", "-q", "-w", "net.ipv6.conf."+nsLink+".accept_dad=0"); err != nil {
		return err
	}
	for _, a := range addrs {
		if err := ipn(ns, addrArgs(a, nsLink)...); err != nil {
			return err
		}
	}
	return ipn(ns, "link", "set", "dev", nsLink, "up")
}

// --- addresses ---

// L2Subnet is the segment's subnet of family f (198.18.125.0/24,
// 2001:db8:125::/64).
func L2Subnet(f Family) netip.Prefix {
	if f == IPv6 {
		return netip.PrefixFrom(segmentAddr(f, l2Net, 0), 64)
	}
	return netip.PrefixFrom(segmentAddr(f, l2Net, 0), 24)
}

// L2NodeAddr is node i's address (i from 0: 198.18.125.11+i,
// 2001:db8:125::11+i, written in decimal digits as the other labs').
func L2NodeAddr(f Family, i int) netip.Addr { return segmentAddr(f, l2Net, 11+i) }

// L2ClientAddr is the client's address (198.18.125.2, 2001:db8:125::2).
func L2ClientAddr(f Family) netip.Addr { return segmentAddr(f, l2Net, 2) }

// L2VIP is the i-th address (i from 0 to 54) of the segment that no node or
// client holds, for the LoadBalancer addresses of tests: 198.18.125.200+i,
// 2001:db8:125::200+i. It panics outside that range.
func L2VIP(f Family, i int) netip.Addr {
	if i < 0 || i >= l2MaxVIPs {
		panic(fmt.Sprintf("netlab: L2 VIP index %d out of range 0..%d", i, l2MaxVIPs-1))
	}
	return segmentAddr(f, l2Net, 200+i)
}

// L2OutLabel takes the node it labels out of L2 (l2.nodeSelector of
// L2CloudConfig): a test makes a two-node L2 cluster of three nodes so.
const L2OutLabel = "netlab.metal-ccm.io/no-l2"

// L2CloudConfig is a cloud-config with one pool "l2" of eight addresses of
// each family of the segment (L2VIP 0 to 7), answered with L2 and announced
// with nothing else, by the nodes without L2OutLabel, its membership keyed
// with the key in keyFile (WriteL2Key), followed by extra (more top-level
// fields but l2, or "").
func L2CloudConfig(keyFile, extra string) string {
	return fmt.Sprintf(`apiVersion: metal-ccm.io/v1alpha1
kind: CloudConfig
loadBalancer:
  pools:
  - name: l2
    addresses: ["%s-%s", "%s-%s"]
    announce: [L2]
l2:
  secretFile: %q
  nodeSelector: {matchExpressions: [{key: %s, operator: DoesNotExist}]}
`, L2VIP(IPv4, 0), L2VIP(IPv4, 7), L2VIP(IPv6, 0), L2VIP(IPv6, 7), keyFile, L2OutLabel) + extra
}

// WriteL2Key writes a new random membership key (l2.secretFile, base64)
// into dir and returns its path: the labs run the membership keyed, as the
// chart does.
func WriteL2Key(dir string) (string, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return "", fmt.Errorf("netlab: L2 key: %w", err)
	}
	path := filepath.Join(dir, "l2-key")
	if err := os.WriteFile(path, []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("netlab: L2 key: %w", err)
	}
	return path, nil
}

// L2TestCloudConfig is L2CloudConfig with a key in the test's temporary
// folder.
func L2TestCloudConfig(t testing.TB, extra string) string {
	t.Helper()
	key, err := WriteL2Key(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return L2CloudConfig(key, extra)
}

// L2Owner is the node (by index) the agents must choose for vip among the
// nodes alive: the first by rendezvous hashing of their addresses of vip's
// family, as pkg/l2/elect decides; -1 when alive is empty.
func L2Owner(vip netip.Addr, alive []int) int {
	f := FamilyOf(vip)
	var hops []netip.Addr
	for _, i := range alive {
		hops = append(hops, L2NodeAddr(f, i))
	}
	owner, _ := rendezvous.Owner(netip.PrefixFrom(vip, vip.BitLen()), hops)
	for _, i := range alive {
		if L2NodeAddr(f, i) == owner {
			return i
		}
	}
	return -1
}

// NodeAddrs are the node addresses of family f, by node index.
func (l *L2Lab) NodeAddrs(f Family) []netip.Addr {
	out := make([]netip.Addr, len(l.Nodes))
	for i := range out {
		out[i] = L2NodeAddr(f, i)
	}
	return out
}

// --- namespaces and links ---

// NodeNamespace is node i's namespace.
func (l *L2Lab) NodeNamespace(i int) string { return l.Nodes[i] }

// ClientNamespace is the client's namespace.
func (l *L2Lab) ClientNamespace() string { return l.Client }

// NodeLink is the name of every node's (and the client's) link to the
// switch inside its namespace.
const NodeLink = nsLink

// node checks a node index.
func (l *L2Lab) node(i int) error {
	if i < 0 || i >= len(l.Nodes) {
		return fmt.Errorf("netlab L2: no node %d", i)
	}
	return nil
}

// NodeMAC is the MAC address of node i's link to the switch.
func (l *L2Lab) NodeMAC(i int) (net.HardwareAddr, error) {
	if err := l.node(i); err != nil {
		return nil, err
	}
	return hardwareAddr(l.Nodes[i], nsLink)
}

// ClientMAC is the MAC address of the client's link to the switch.
func (l *L2Lab) ClientMAC() (net.HardwareAddr, error) { return hardwareAddr(l.Client, nsLink) }

func hardwareAddr(ns, dev string) (net.HardwareAddr, error) {
	s, err := linkMAC(ns, dev)
	if err != nil {
		return nil, err
	}
	mac, err := net.ParseMAC(s)
	if err != nil {
		return nil, fmt.Errorf("MAC address of %s in %s: %w", dev, ns, err)
	}
	return mac, nil
}

// WaitClientMAC waits until the client resolves vip to node i's MAC, and
// returns how long it took. Between looks it nudges the client: by
// default a ping (which nobody needs to answer), that has it ask by ARP or
// NDP when it has no entry, and probe a stale one; every nudge is given
// 200 ms.
func (l *L2Lab) WaitClientMAC(t testing.TB, vip netip.Addr, i int, within time.Duration, nudge ...func(context.Context)) time.Duration {
	t.Helper()
	want, err := l.NodeMAC(i)
	if err != nil {
		t.Fatal(err)
	}
	poke := func(ctx context.Context) { _ = l.ClientPing(ctx, vip) }
	if len(nudge) > 0 {
		poke = nudge[0]
	}
	start := time.Now()
	var got net.HardwareAddr
	for time.Since(start) < within {
		if got, _, _, err = l.ClientNeighbor(vip); err == nil && bytes.Equal(got, want) {
			return time.Since(start)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		poke(ctx)
		cancel()
	}
	t.Fatalf("the client resolves %s to %v, want node %d's %v after %s", vip, got, i, want, within)
	return 0
}

// SetNodeLink sets the switch's port of node i down or up. Down, the node
// is as if powered off for the network: nothing reaches it and nothing it
// sends leaves, while its own processes run on.
func (l *L2Lab) SetNodeLink(i int, up bool) error {
	if err := l.node(i); err != nil {
		return err
	}
	return setLink(l.Switch, l2NodePort(i), up)
}

// ClientRun runs a command in the client namespace, killed when ctx ends,
// and returns its standard output.
func (l *L2Lab) ClientRun(ctx context.Context, args ...string) (string, error) {
	return execIn(ctx, l.Client, args...)
}

// NodeRun runs a command in node i's namespace, killed when ctx ends, and
// returns its standard output.
func (l *L2Lab) NodeRun(ctx context.Context, i int, args ...string) (string, error) {
	if err := l.node(i); err != nil {
		return "", err
	}
	return execIn(ctx, l.Nodes[i], args...)
}

// --- the client's neighbour table ---

// FlushClientNeighbors forgets every neighbour the client has learnt, both
// families, so that its next packet to an address asks again (ARP or
// Neighbor Solicitation).
func (l *L2Lab) FlushClientNeighbors() error {
	for _, f := range []string{"-4", "-6"} {
		if err := ipn(l.Client, f, "neigh", "flush", "dev", nsLink); err != nil {
			return err
		}
	}
	return nil
}

// ClientNeighbor is the client's neighbour entry of addr: the MAC address
// it resolved (nil while unresolved or failed), the entry's state as ip
// prints it ("REACHABLE", "STALE", "FAILED", ...; several are joined by
// ","), and whether there is an entry at all.
func (l *L2Lab) ClientNeighbor(addr netip.Addr) (net.HardwareAddr, string, bool, error) {
	out, err := output("ip", "-n", l.Client, "-j", "neigh", "show", addr.String(), "dev", nsLink)
	if err != nil {
		return nil, "", false, err
	}
	return parseNeighbor(out)
}

// parseNeighbor reads the one entry of `ip -j neigh show <addr>`.
func parseNeighbor(out string) (net.HardwareAddr, string, bool, error) {
	var entries []struct {
		LLAddr string   `json:"lladdr"`
		State  []string `json:"state"`
	}
	if strings.TrimSpace(out) == "" {
		return nil, "", false, nil
	}
	if err := json.Unmarshal([]byte(out), &entries); err != nil {
		return nil, "", false, fmt.Errorf("neighbour entry %q: %w", out, err)
	}
	if len(entries) == 0 {
		return nil, "", false, nil
	}
	e := entries[0]
	var mac net.HardwareAddr
	if e.LLAddr != "" {
		var err error
		if mac, err = net.ParseMAC(e.LLAddr); err != nil {
			return nil, "", false, fmt.Errorf("neighbour entry %q: %w", out, err)
		}
	}
	return mac, strings.Join(e.State, ","), true, nil
}
