package netlab

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"time"
)

// RouterKind is the BGP implementation the lab's router runs.
type RouterKind string

// The routers a lab can run. Tests run one scenario against both to catch
// what only one implementation does.
const (
	// RouterBIRD is BIRD 2 (the default).
	RouterBIRD RouterKind = "bird"
	// RouterFRR is FRR (zebra + bgpd), as Debian ships it (8.4).
	RouterFRR RouterKind = "frr"
)

// RouterKinds are all the routers, the default first, for tests that run a
// subtest per router.
var RouterKinds = []RouterKind{RouterBIRD, RouterFRR}

// Available reports why a lab with this router cannot run here, or nil.
func (k RouterKind) Available() error {
	switch k {
	case "", RouterBIRD:
		return Available()
	case RouterFRR:
		return AvailableFRR()
	}
	return fmt.Errorf("netlab: unknown router %q", k)
}

// checkPassword refuses a TCP MD5 password that this kind's config cannot
// carry, before a lab is built.
func (k RouterKind) checkPassword(pw string) error {
	if k == RouterFRR {
		return checkFRRPassword(pw)
	}
	return nil
}

// RouterKind is the router this lab runs.
func (l *Lab) RouterKind() RouterKind { return l.Opts.Router }

// router is the BGP daemon of a router namespace, BIRD or FRR: the labs
// call it and never ask which one runs. Its processes are kept in the
// routerNS it serves (bird, zebra, bgpd), under that one's mutex, so that
// routerNS.close stops them whatever the kind.
type router interface {
	// config is the config it runs (BIRD's, or FRR bgpd's).
	config() (string, error)
	// prepareLinks readies the router namespace's links devs for the
	// daemon, before it starts.
	prepareLinks(devs ...string) error
	// start runs the daemons with config() until they answer.
	start() error
	// stop stops the daemons by PID; the routerNS's mutex is held.
	stop()
	// pid is the BGP daemon's PID, or 0; the routerNS's mutex is held.
	pid() int
	// log is the daemons' output so far.
	log() string
	// sessionStates maps each neighbor address to its session's state,
	// in the words both implementations use ("Established", "Active").
	sessionStates() (map[netip.Addr]string, error)
	// neighborIDs are the router IDs of the established sessions'
	// neighbors, by neighbor address.
	neighborIDs() (map[netip.Addr]netip.Addr, error)
	// paths are the paths its BGP table holds for exactly prefix.
	paths(prefix netip.Prefix) ([]Path, error)
	// routeProto is the kernel protocol of the routes it installs.
	routeProto() string
}

// routerConfig is what a lab gives its router, whichever kind runs: each
// kind takes the parts it needs, so the lab need not ask which one it is.
type routerConfig struct {
	// bird and frr render the config of each kind; a router that is
	// always of one kind (the leaf-spine's spine) leaves the other nil.
	bird func() string
	frr  func() (string, error)
	// bfdd, when not nil, is FRR's bfdd config (its profiles): bfdd runs
	// beside bgpd.
	bfdd func() string
	// peerAddr is the neighbor address of a BIRD protocol.
	peerAddr func(protocol string) (netip.Addr, bool)
	// sessions: bgpd is ready once it has this many neighbours (a listen
	// range adds more as nodes connect).
	sessions int
}

// newRouter is the daemon of kind serving router namespace n with cfg.
func newRouter(kind RouterKind, n *routerNS, cfg routerConfig) router {
	if kind == RouterFRR {
		return &frrRouter{n: n, cfg: cfg}
	}
	return &birdRouter{n: n, cfg: cfg}
}

// routerConfig is the one-segment lab's: one session per speaker address
// and node of NodePeers, per family.
func (l *Lab) routerConfig() routerConfig {
	cfg := routerConfig{
		bird: l.birdConfig, frr: l.frrConfig, peerAddr: l.Opts.peerAddr,
		sessions: len(l.Opts.peers(IPv4)) + len(l.Opts.peers(IPv6)),
	}
	if l.Opts.BFD {
		cfg.bfdd = func() string { return lsFRRBfddDebug + labFRRBfddConfig }
	}
	return cfg
}

// labFRRBfddConfig is the router's bfdd config with Options.BFD: the
// profile of its speaker peer groups, the speakers' (LeafSpineBFD).
const labFRRBfddConfig = `bfd
 profile speakers
  receive-interval 300
  transmit-interval 300
  detect-multiplier 3
 exit
exit
`

// routerStopGrace is how long a router daemon gets to shut down (and remove
// its kernel routes) before SIGKILL.
const routerStopGrace = 5 * time.Second

// SessionStates maps each speaker address (and node address of NodePeers)
// to the state of the router's BGP session with it ("Established",
// "Active", "Connect", ...), with the same words for both routers.
func (n *routerNS) SessionStates() (map[netip.Addr]string, error) { return n.rt.sessionStates() }

// WaitEstablished polls until the router's sessions with all the given
// speaker (or NodePeers node) addresses are established.
func (n *routerNS) WaitEstablished(ctx context.Context, addrs ...netip.Addr) error {
	return waitEstablished(ctx, n.SessionStates, addrs)
}

// waitEstablished polls states until the sessions with addrs are all
// established.
func waitEstablished(ctx context.Context, states func() (map[netip.Addr]string, error), addrs []netip.Addr) error {
	return poll(ctx, func() (bool, string) {
		st, err := states()
		if err != nil {
			return false, err.Error()
		}
		for _, a := range addrs {
			if st[a] != "Established" {
				return false, fmt.Sprintf("sessions: %v", st)
			}
		}
		return true, ""
	})
}

// poll calls check every 100ms until it reports done or ctx ends; the error
// then carries check's last word.
func poll(ctx context.Context, check func() (bool, string)) error {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		done, last := check()
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w; last: %s", ctx.Err(), last)
		case <-t.C:
		}
	}
}

// readLog is the content of a daemon's log file, or why there is none.
func readLog(name, path string) string {
	b, err := os.ReadFile(path) //nolint:gosec // a file in the lab's folder
	if err != nil {
		return fmt.Sprintf("(no %s log: %v)", name, err)
	}
	return string(b)
}
