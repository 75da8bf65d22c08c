// Package netlab builds a small routed network in Linux network namespaces for
// tests: a router namespace running a real BIRD 2 or FRR (Options.Router),
// node namespaces on a shared "node segment" behind the router's bridge, a
// client namespace on another link, and veth pairs that attach the host
// (root) namespace to the node segment so that a BGP speaker running in the
// test process can peer with the router. It needs root, iproute2 and BIRD 2,
// or FRR for an FRR router (hack/install-deps.sh installs them).
//
// Every address the lab uses is in 198.18.0.0/15 or 2001:db8::/32. The host
// side gets only the connected routes of the node segment. Labs are
// serialized across processes by a lock file, because the host-side addresses
// are fixed; namespace and link names carry a random per-lab prefix.
package netlab

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/routerid"
)

// Default ASNs of the router and of the speakers it peers with.
const (
	DefaultRouterASN  = 64500
	DefaultSpeakerASN = 64512
)

// Family is an IP address family.
type Family int

// The two families.
const (
	IPv4 Family = 4
	IPv6 Family = 6
)

// FamilyOf is a's family.
func FamilyOf(a netip.Addr) Family {
	if a.Is6() {
		return IPv6
	}
	return IPv4
}

// maxSpeakers and maxNodes bound the host numbers used on the node segment:
// speakers take .2 to .9, nodes .11 upwards.
const (
	maxSpeakers = 8
	maxNodes    = 100
)

// Options shape a lab. The zero value gives 3 nodes, 3 speaker addresses per
// family and the default ASNs.
type Options struct {
	// Nodes is the number of node namespaces (default 3).
	Nodes int
	// Speakers is the number of speaker source addresses per family on the
	// host (default 3, at most 8); the router has one BGP session per address.
	Speakers int
	// RouterASN is the router's ASN (default 64500).
	RouterASN uint32
	// SpeakerASN is the ASN the router expects from the speakers (default 64512).
	SpeakerASN uint32
	// Password is the TCP MD5 password of every BGP session ("" = none).
	Password string
	// Passwords overrides Password for the sessions of one speaker index.
	Passwords map[int]string
	// Router is the BGP implementation of the router (default RouterBIRD).
	Router RouterKind
	// NodePeers are node indexes whose own segment addresses (NodeAddr, both
	// families) get a passive BGP session like the speakers' (ASN SpeakerASN,
	// password Password): for a speaker that runs inside a node namespace,
	// such as a CCM pod on a real node's host network.
	NodePeers []int
	// SecondRouter gives the router a second address per family
	// (SecondRouterAddr) with a session of its own from every speaker
	// address, in AS SecondRouterASN: two routers to the speakers, for
	// routing policy (pools sent to one of them). BIRD only.
	SecondRouter bool
	// SecondRouterASN is the AS of the second address's sessions (default
	// SpeakerASN: iBGP, so that local preference goes through).
	SecondRouterASN uint32
	// BirdExtra is put in BIRD's config before its BGP sessions (filters
	// for a test to apply with `show route filter`, templates).
	BirdExtra string
	// BirdTemplates name, per family, a BIRD template (of BirdExtra) that
	// the speakers' sessions of that family are made from, instead of the
	// lab's own settings (passive, password, channel): the template says
	// them all.
	BirdTemplates map[Family]string
	// FRRExtra is put in FRR's config before its BGP section (community
	// lists and route maps), and FRRImport names a route map the speakers'
	// sessions import through ("": none).
	FRRExtra, FRRImport string
	// BFD runs BFD on the router's sessions with the speakers and
	// NodePeers nodes (BIRD's bfd protocol, FRR's bfdd), 300 ms × 3, and
	// CloudConfig gives the peers the same profile (LeafSpineBFD). Not with
	// BirdTemplates, whose templates say the sessions' settings.
	BFD bool
	// FRRAfter is put in FRR's config after the lab's: more of the same
	// `router bgp` (settings of the peer groups CCM and CCM6), which FRR
	// merges into it.
	FRRAfter string
	// PoolFields are YAML fields CloudConfig adds to its pool
	// ("weightedECMP: true").
	PoolFields []string
	// IPv6Only makes the network of an IPv6-only cluster of NodePeers
	// nodes: the nodes' links keep no IPv4 address (nor IPv4 route), and
	// the router's only sessions are those nodes' IPv6 ones (none of IPv4,
	// none with the host's speaker addresses; NodeAddr(IPv4, i) is then
	// no node's). docs/node-agent.md shows the router's configs.
	IPv6Only bool
	// UnnumberedSpeaker lets a speaker on the host peer with the router by
	// interface (bgp.peers[].interface: HostLink): link-local addresses on
	// the node segment (the router's RouterLinkLocal, the host link's
	// SpeakerLinkLocal), a session the router takes from any link-local
	// address there carrying IPv4 and IPv6; FRR's Router Advertisements
	// there, which the host link takes only to learn the router and the
	// nodes not at all (unnumbered_speaker.go). Not with IPv6Only.
	UnnumberedSpeaker bool
}

func (o *Options) defaults() error {
	if o.Nodes == 0 {
		o.Nodes = 3
	}
	if o.Speakers == 0 {
		o.Speakers = 3
	}
	if o.RouterASN == 0 {
		o.RouterASN = DefaultRouterASN
	}
	if o.SpeakerASN == 0 {
		o.SpeakerASN = DefaultSpeakerASN
	}
	if o.Router == "" {
		o.Router = RouterBIRD
	}
	if !slices.Contains(RouterKinds, o.Router) {
		return fmt.Errorf("router %q is none of %q", o.Router, RouterKinds)
	}
	if o.BFD && len(o.BirdTemplates) > 0 {
		return errors.New("BFD with BIRD templates: the templates say the sessions' settings")
	}
	if o.IPv6Only && (len(o.NodePeers) == 0 || o.SecondRouter) {
		return errors.New("IPv6-only: the router's sessions are the NodePeers nodes' alone")
	}
	if o.IPv6Only && o.UnnumberedSpeaker {
		return errors.New("IPv6-only with an unnumbered speaker: the router's sessions are the NodePeers nodes' alone")
	}
	if o.SecondRouter && o.Router != RouterBIRD {
		return fmt.Errorf("a second router address needs %q", RouterBIRD)
	}
	if o.SecondRouterASN == 0 {
		o.SecondRouterASN = o.SpeakerASN
	}
	if o.Nodes < 1 || o.Nodes > maxNodes {
		return fmt.Errorf("nodes %d out of range 1..%d", o.Nodes, maxNodes)
	}
	if o.Speakers < 1 || o.Speakers > maxSpeakers {
		return fmt.Errorf("speakers %d out of range 1..%d", o.Speakers, maxSpeakers)
	}
	for j, i := range o.NodePeers {
		if i < 0 || i >= o.Nodes {
			return fmt.Errorf("node peer %d out of range 0..%d", i, o.Nodes-1)
		}
		if slices.Contains(o.NodePeers[:j], i) {
			return fmt.Errorf("node peer %d given twice", i)
		}
	}
	return nil
}

// peer is one of the router's BGP sessions.
type peer struct {
	name     string // BIRD's protocol name, unique per family and address
	addr     netip.Addr
	password string
	// routerID is the router ID the peer's speaker takes, when the config
	// should say it (an IPv6-only node's, folded from its address).
	routerID netip.Addr
}

// peers are the router's sessions of family f: one per speaker address,
// then one per node of NodePeers (only the latter, of IPv6, with IPv6Only).
func (o *Options) peers(f Family) []peer {
	if !o.hasFamily(f) {
		return nil
	}
	var out []peer
	if !o.IPv6Only {
		for i := range o.Speakers {
			out = append(out, peer{name: ProtocolName(f, i), addr: SpeakerAddr(f, i), password: o.password(i)})
		}
	}
	for _, i := range o.NodePeers {
		p := peer{name: nodeProtocolName(f, i), addr: NodeAddr(f, i), password: o.Password}
		if o.IPv6Only {
			p.routerID = routerid.FromIPv6(p.addr)
		}
		out = append(out, p)
	}
	return out
}

// families are the families of the router's sessions.
func (o *Options) families() []Family {
	if o.IPv6Only {
		return []Family{IPv6}
	}
	return []Family{IPv4, IPv6}
}

// hasFamily is whether the router has sessions of family f.
func (o *Options) hasFamily(f Family) bool { return slices.Contains(o.families(), f) }

// peerAddr is the address of the session BIRD names protocol, if it is one
// of the lab's.
func (o *Options) peerAddr(protocol string) (netip.Addr, bool) {
	if o.UnnumberedSpeaker && strings.HasPrefix(protocol, unnumberedSpeakerProtocol+"_") {
		return SpeakerLinkLocal, true
	}
	for _, f := range []Family{IPv4, IPv6} {
		for _, p := range o.peers(f) {
			if p.name == protocol {
				return p.addr, true
			}
		}
	}
	return netip.Addr{}, false
}

// password is the TCP MD5 password of speaker i's sessions.
func (o *Options) password(i int) string {
	if p, ok := o.Passwords[i]; ok {
		return p
	}
	return o.Password
}

// Lab is a running topology. Its methods are safe for concurrent use.
type Lab struct {
	// ID is the random part of every name the lab gives.
	ID string
	// Router, Client and Nodes are the namespace names.
	Router string
	Client string
	Nodes  []string
	// HostLink is the host end of the speaker veth.
	HostLink string
	// Dir holds the router's config, control sockets and logs.
	Dir string
	// Opts are the options with defaults filled in.
	Opts Options

	// routerNS is the router namespace and its daemon (made by build, in
	// Dir): its methods (Birdc, Vtysh, Routes, SessionStates, ...) are the
	// lab's.
	*routerNS

	mu         sync.Mutex
	namespaces []string // created, in order
	links      []string // host links created
	cl         closing
	lock       *os.File
}

// Available reports why a lab with the default router (BIRD) cannot run here
// (not root, a tool missing), or nil. AvailableFRR is the same for FRR.
func Available() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("netlab needs root (euid %d)", os.Geteuid())
	}
	for _, bin := range []string{"ip", birdPath, birdcPath} {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("netlab needs %s (run hack/install-deps.sh as root): %w", bin, err)
		}
	}
	return nil
}

// New builds a lab for a test and closes it in t.Cleanup, also when the test
// fails. It skips the test, saying why, when the lab cannot run here.
func New(t testing.TB, opts Options) *Lab {
	t.Helper()
	if err := opts.Router.Available(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	l, err := Start(opts)
	if err != nil {
		t.Fatalf("netlab: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("netlab: %s log:\n%s", l.Opts.Router, l.RouterLog())
		}
		if err := l.Close(); err != nil {
			t.Errorf("netlab: %v", err)
		}
	})
	return l
}

// Start builds a lab; the caller must Close it. It waits for other labs on
// this machine to close first.
func Start(opts Options) (*Lab, error) {
	if err := opts.defaults(); err != nil {
		return nil, fmt.Errorf("netlab options: %w", err)
	}
	lock, err := acquireLock()
	if err != nil {
		return nil, err
	}
	id, err := randomID()
	if err != nil {
		_ = lock.Close()
		return nil, err
	}
	l := &Lab{ID: id, Opts: opts, lock: lock, HostLink: "mccm" + id + "h"}
	prefix := "mccm-" + id + "-"
	l.Router, l.Client = prefix+"router", prefix+"client"
	for i := range opts.Nodes {
		l.Nodes = append(l.Nodes, fmt.Sprintf("%snode%d", prefix, i))
	}
	if err := l.build(); err != nil {
		return nil, errors.Join(fmt.Errorf("netlab start: %w", err), l.Close())
	}
	return l, nil
}

// lockPath is shared by all labs on the machine: their host-side addresses
// are the same, so only one lab may exist at a time.
var lockPath = filepath.Join(os.TempDir(), "metal-ccm-netlab.lock")

// leftoverLink matches the host links of labs whose process died.
var leftoverLink = regexp.MustCompile(`^mccm[0-9a-f]{6}h$`)

// acquireLock takes the machine-wide lab lock, then removes host links that a
// crashed lab left: while the lock is held no other lab exists, and such a
// link would hold the same addresses. It also stops a crashed lab's FRR
// daemons (reapFRR).
func acquireLock() (*os.File, error) {
	f, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o600) //nolint:gosec // a fixed path in the temporary folder
	if err != nil {
		return nil, fmt.Errorf("netlab lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("netlab lock: %w", err)
	}
	out, err := exec.Command("ip", "-o", "link", "show").Output()
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("netlab list links: %w", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimSuffix(fields[1], ":"), "@")
		if leftoverLink.MatchString(name) {
			_ = run("ip", "link", "del", "dev", name)
		}
	}
	reapFRR()
	return f, nil
}

func randomID() (string, error) {
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("netlab id: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// Close stops the router and the lab's servers and deletes exactly the
// namespaces, links and files the lab created. It is safe to call more than
// once.
func (l *Lab) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.cl.close() {
		return nil
	}
	var errs []error
	if l.routerNS != nil {
		errs = append(errs, l.closeRouter())
	}
	for _, link := range l.links {
		if err := run("ip", "link", "del", "dev", link); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, deleteNamespaces(l.namespaces)...)
	if l.lock != nil {
		_ = l.lock.Close()
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("netlab close: %w", err)
	}
	return nil
}

// isClosed reports whether Close has begun.
func (l *Lab) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cl.closed
}

// addCloser registers fn to run first in Close.
func (l *Lab) addCloser(fn func()) error { return l.cl.add(&l.mu, fn) }

// closing is what a lab runs first in Close, and whether it has closed; the
// lab's mutex guards it.
type closing struct {
	closers []func()
	closed  bool
}

// add registers fn under mu; on a closed lab it runs fn at once and fails.
func (c *closing) add(mu *sync.Mutex, fn func()) error {
	mu.Lock()
	defer mu.Unlock()
	if c.closed {
		fn()
		return errors.New("netlab: lab closed")
	}
	c.closers = append(c.closers, fn)
	return nil
}

// close, called with the lab's mutex held, marks the lab closed and runs
// the closers, last added first. It returns false if the lab had closed
// already.
func (c *closing) close() bool {
	if c.closed {
		return false
	}
	c.closed = true
	for i := len(c.closers) - 1; i >= 0; i-- {
		c.closers[i]()
	}
	return true
}

// RouterAddr is the router's address on the node segment.
func RouterAddr(f Family) netip.Addr { return segmentAddr(f, 10, 1) }

// SecondRouterAddr is the router's second address on the node segment
// (Options.SecondRouter).
func SecondRouterAddr(f Family) netip.Addr { return segmentAddr(f, 10, 10) }

// SpeakerAddr is the host's i-th speaker source address on the node segment.
func SpeakerAddr(f Family, i int) netip.Addr { return segmentAddr(f, 10, 2+i) }

// NodeAddr is node i's address on the node segment (i from 0: .11, .12, ...).
func NodeAddr(f Family, i int) netip.Addr { return segmentAddr(f, 10, 11+i) }

// ClientAddr is the client's address on its link.
func ClientAddr(f Family) netip.Addr { return segmentAddr(f, 20, 2) }

// ClientGateway is the router's address on the client link.
func ClientGateway(f Family) netip.Addr { return segmentAddr(f, 20, 1) }

// segmentAddr is host number host of 198.18.<net>.0/24, or of
// 2001:db8:<net>::/64 written the same way in decimal digits (.11 is ::11).
func segmentAddr(f Family, net, host int) netip.Addr {
	if f == IPv6 {
		return netip.MustParseAddr(fmt.Sprintf("2001:db8:%d::%d", net, host))
	}
	return netip.AddrFrom4([4]byte{198, 18, byte(net), byte(host)}) //nolint:gosec // segments 10 and 20, hosts up to 110
}

// SpeakerAddrs are the host's speaker source addresses of one family.
func (l *Lab) SpeakerAddrs(f Family) []netip.Addr {
	out := make([]netip.Addr, l.Opts.Speakers)
	for i := range out {
		out[i] = SpeakerAddr(f, i)
	}
	return out
}

// NodeAddrs are the node addresses of one family, by node index.
func (l *Lab) NodeAddrs(f Family) []netip.Addr {
	out := make([]netip.Addr, len(l.Nodes))
	for i := range out {
		out[i] = NodeAddr(f, i)
	}
	return out
}

// NodeName is the name node i answers with (see ServeHTTP).
func (l *Lab) NodeName(i int) string { return fmt.Sprintf("node%d", i) }

// labRanges hold every address a lab may use.
var labRanges = []netip.Prefix{netip.MustParsePrefix("198.18.0.0/15"), netip.MustParsePrefix("2001:db8::/32")}

// checkAddr refuses an address outside the lab's ranges.
func checkAddr(a netip.Addr) error {
	for _, p := range labRanges {
		if p.Contains(a.Unmap()) {
			return nil
		}
	}
	return fmt.Errorf("address %s is outside the lab ranges 198.18.0.0/15 and 2001:db8::/32", a)
}
