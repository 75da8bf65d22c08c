package netlab

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/metal-ccm/metal-ccm/test/framework"
)

// routerNS is a router namespace with its BGP daemon (router) and the
// folder of the daemon's config, control sockets and logs. The one-segment
// lab is built around one (Lab embeds it, so its router methods are the
// lab's); the leaf-spine lab has three, the spine and the ToRs.
type routerNS struct {
	ns   string // the namespace
	dir  string
	kind RouterKind
	rt   router

	mu sync.Mutex // guards what follows
	// The daemons' processes: bird, or zebra, bgpd and bfdd (when the
	// config has BFD; rt says which).
	bird, zebra, bgpd, bfdd *framework.Process
	// frrMadeTmpBase: FRR's /var/tmp/frr did not exist before the lab.
	frrMadeTmpBase bool
	closed         bool
	savedLog       string // the daemons' log, read before closeRouter removes dir
}

// newRouterNS is the router of namespace ns, kind kind, with its folder
// dir; it starts nothing.
func newRouterNS(ns, dir string, kind RouterKind, cfg routerConfig) *routerNS {
	n := &routerNS{ns: ns, dir: dir, kind: kind}
	n.rt = newRouter(kind, n, cfg)
	return n
}

// closeRouter stops the daemons by PID, keeps their log and removes the
// folder. It is safe to call more than once.
func (n *routerNS) closeRouter() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil
	}
	n.closed = true
	n.rt.stop()
	n.closeFRR()
	n.savedLog = n.rt.log()
	return os.RemoveAll(n.dir)
}

// RestartRouter stops the router daemons (by PID; they close their sessions
// and remove their kernel routes) and starts them again with the same
// config.
func (n *routerNS) RestartRouter() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return errors.New("netlab restart router: lab closed")
	}
	n.rt.stop()
	n.mu.Unlock()
	if err := n.rt.start(); err != nil {
		return fmt.Errorf("netlab restart router: %w", err)
	}
	return nil
}

// RouterPID is the PID of the running BGP daemon (bird or bgpd), or 0.
func (n *routerNS) RouterPID() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.rt.pid()
}

// BirdPID is RouterPID, kept for existing callers.
func (n *routerNS) BirdPID() int { return n.RouterPID() }

// RouterLog is the router daemons' output so far (kept after closeRouter).
func (n *routerNS) RouterLog() string {
	n.mu.Lock()
	saved, closed := n.savedLog, n.closed
	n.mu.Unlock()
	if closed {
		return saved
	}
	return n.rt.log()
}

// BirdLog is RouterLog, kept for existing callers.
func (n *routerNS) BirdLog() string { return n.RouterLog() }

// RouterConfig is the config the router runs: BIRD's, or FRR bgpd's.
func (n *routerNS) RouterConfig() (string, error) { return n.rt.config() }
