package netlab

import (
	"context"
	"errors"
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

// RouterKind is the router this lab runs.
func (l *Lab) RouterKind() RouterKind { return l.Opts.Router }

// routerStopGrace is how long a router daemon gets to shut down (and remove
// its kernel routes) before SIGKILL.
const routerStopGrace = 5 * time.Second

// startRouter starts the router daemons in the router namespace and waits
// until they answer.
func (l *Lab) startRouter() error {
	if l.Opts.Router == RouterFRR {
		return l.startFRR()
	}
	return l.startBird()
}

// stopRouter stops the router daemons by PID; l.mu is held.
func (l *Lab) stopRouter() {
	l.stopBird()
	l.stopFRR()
}

// RouterPID is the PID of the running BGP daemon (bird or bgpd), or 0.
func (l *Lab) RouterPID() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.bird
	if l.Opts.Router == RouterFRR {
		p = l.bgpd
	}
	if p == nil {
		return 0
	}
	return p.PID()
}

// BirdPID is RouterPID, kept for existing callers.
func (l *Lab) BirdPID() int { return l.RouterPID() }

// RestartRouter stops the router daemons (by PID; they close their sessions
// and remove their kernel routes) and starts them again with the same
// config.
func (l *Lab) RestartRouter() error {
	l.mu.Lock()
	if l.cl.closed {
		l.mu.Unlock()
		return errors.New("netlab restart router: lab closed")
	}
	l.stopRouter()
	l.mu.Unlock()
	if err := l.startRouter(); err != nil {
		return fmt.Errorf("netlab restart router: %w", err)
	}
	return nil
}

// RouterLog is the router daemons' output so far (kept after Close).
func (l *Lab) RouterLog() string {
	l.mu.Lock()
	saved := l.savedLog
	l.mu.Unlock()
	if saved != "" {
		return saved
	}
	return l.readRouterLog()
}

// BirdLog is RouterLog, kept for existing callers.
func (l *Lab) BirdLog() string { return l.RouterLog() }

// readRouterLog reads the log files of the lab's router.
func (l *Lab) readRouterLog() string {
	if l.Opts.Router == RouterFRR {
		return l.frrLog()
	}
	return readLog("bird", l.birdLogPath())
}

// SessionStates maps each speaker address (and node address of NodePeers)
// to the state of the router's BGP session with it ("Established", "Active", "Connect", ...), with the same
// words for both routers.
func (l *Lab) SessionStates() (map[netip.Addr]string, error) {
	if l.Opts.Router == RouterFRR {
		return l.frrSessionStates()
	}
	return l.birdSessionStates()
}

// WaitEstablished polls until the router's sessions with all the given
// speaker (or NodePeers node) addresses are established.
func (l *Lab) WaitEstablished(ctx context.Context, addrs ...netip.Addr) error {
	return waitEstablished(ctx, l.SessionStates, addrs)
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

// routeProto is the kernel protocol of the routes the router installs.
func (l *Lab) routeProto() string {
	if l.Opts.Router == RouterFRR {
		return "bgp" // zebra installs BGP routes as proto 186
	}
	return "bird"
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
