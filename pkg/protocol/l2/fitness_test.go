package l2

import (
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/metal-ccm/metal-ccm/pkg/healthcheck"
	"github.com/metal-ccm/metal-ccm/pkg/l2/member"
)

// kubeProxy is a stand-in for kube-proxy's /healthz on loopback, whose
// answer the test turns.
func kubeProxy(t *testing.T) (netip.AddrPort, *atomic.Bool) {
	t.Helper()
	ok := &atomic.Bool{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if !ok.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return netip.MustParseAddrPort(ln.Addr().String()), ok
}

// gossiped records what the fitness loop gossips.
type gossiped struct {
	mu   sync.Mutex
	last member.Fitness
	n    int
}

func (g *gossiped) set(f member.Fitness) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.last, g.n = f, g.n+1
	return nil
}

func (g *gossiped) get() (member.Fitness, int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.last, g.n
}

// TestFitness: the agent says its node forwards only while its kube-proxy
// passes (not before the first check), tells the segments it reaches,
// keeps the last ones when the interfaces cannot be listed, and is ready
// only while its node forwards.
func TestFitness(t *testing.T) {
	target, healthy := kubeProxy(t)
	seg := []netip.Prefix{netip.MustParsePrefix("198.18.125.0/24")}
	var reachErr atomic.Bool
	reach := func() (bool, []netip.Prefix, error) {
		if reachErr.Load() {
			return false, nil, errors.New("no netlink")
		}
		return false, seg, nil
	}
	g := &gossiped{}
	opts := healthcheck.DefaultOptions()
	f := newFitness(&opts, target, reach, g.set)
	if err := f.Ready(); !errors.Is(err, ErrCannotForward) {
		t.Errorf("before any check: Ready() = %v, want ErrCannotForward", err)
	}
	go f.Run(t.Context())

	eventually(t, "the segments gossiped, not forwarding yet", func() bool {
		last, _ := g.get()
		return !last.Forwards && last.Equal(member.Fitness{Reach: seg})
	})
	healthy.Store(true)
	eventually(t, "kube-proxy passing", func() bool { return f.checker.State(target) == healthcheck.Healthy })
	f.poke()
	time.Sleep(100 * time.Millisecond) // Run's update (a gossip to forwarding would show by now)
	if err := f.Ready(); err == nil || !strings.Contains(err.Error(), "not decided") {
		t.Errorf("kube-proxy passing before the agent decided once: Ready() = %v, want not decided", err)
	}
	if last, _ := g.get(); last.Forwards {
		t.Errorf("kube-proxy passing before the agent decided once: gossiped %v, want not forwarding", last)
	}
	f.Decided()
	eventually(t, "forwarding gossiped once kube-proxy passes and the agent decided", func() bool { last, _ := g.get(); return last.Forwards })
	if err := f.Ready(); err != nil {
		t.Errorf("kube-proxy passing: Ready() = %v", err)
	}
	reachErr.Store(true)
	healthy.Store(false)
	eventually(t, "not forwarding once kube-proxy fails", func() bool { last, _ := g.get(); return !last.Forwards })
	if last, _ := g.get(); !last.Equal(member.Fitness{Reach: seg}) {
		t.Errorf("interfaces not listed: gossiped %v, want the last segments kept", last)
	}
	if err := f.Ready(); !errors.Is(err, ErrCannotForward) {
		t.Errorf("kube-proxy failing: Ready() = %v, want ErrCannotForward", err)
	}
}

// TestFitnessUnchecked: with healthChecks.enabled false the node is taken
// to forward, and a node whose interfaces reach no L2 segment is ready
// all the same.
func TestFitnessUnchecked(t *testing.T) {
	g := &gossiped{}
	f := newFitness(nil, netip.AddrPort{}, func() (bool, []netip.Prefix, error) { return false, nil, nil }, g.set)
	f.Decided()
	go f.Run(t.Context())
	eventually(t, "forwarding gossiped", func() bool { last, _ := g.get(); return last.Forwards })
	if err := f.Ready(); err != nil {
		t.Errorf("Ready() = %v", err)
	}
	if _, n := g.get(); n != 1 {
		t.Errorf("gossiped %d times, want once: nothing changed", n)
	}
}

// TestFitnessStale: an agent whose API view is stale does not forward,
// whatever its checks say, and says why; fresh again, it does.
func TestFitnessStale(t *testing.T) {
	g := &gossiped{}
	var stale atomic.Bool
	stale.Store(true)
	f := newFitness(nil, netip.AddrPort{}, func() (bool, []netip.Prefix, error) { return true, nil, nil }, g.set)
	f.stale = stale.Load
	f.Decided()
	go f.Run(t.Context())
	eventually(t, "the stale view told", func() bool {
		err := f.Ready()
		return err != nil && strings.Contains(err.Error(), "stale")
	})
	if last, _ := g.get(); last.Forwards {
		t.Errorf("stale view: gossiped %v, want not forwarding", last)
	}
	stale.Store(false)
	f.poke()
	eventually(t, "forwarding once the view is fresh", func() bool { last, _ := g.get(); return last.Forwards })
}
