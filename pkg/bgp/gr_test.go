package bgp

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// grChildEnv makes the test binary run TestGracefulRestartChild.
const grChildEnv = "METAL_CCM_BGP_GR_CHILD"

// grConfig is the config of the speakers of TestGracefulRestart: speaker
// address 0 of a default lab, graceful restart on.
func grConfig() Config {
	cfg := Config{ASN: netlab.DefaultSpeakerASN, RouterID: netlab.SpeakerAddr(netlab.IPv4, 0)}
	for _, f := range families {
		cfg.Peers = append(cfg.Peers, Peer{
			Address: netlab.RouterAddr(f), ASN: netlab.DefaultRouterASN,
			LocalAddress: netlab.SpeakerAddr(f, 0), GracefulRestart: true,
		})
	}
	return cfg
}

// TestGracefulRestartChild is the speaker process that TestGracefulRestart
// kills: it announces the VIPs via nodes 0, 1 and 2 and runs until killed.
func TestGracefulRestartChild(t *testing.T) {
	if os.Getenv(grChildEnv) == "" {
		t.Skip("helper process of TestGracefulRestart")
	}
	s, err := New(grConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		hops := []netip.Addr{netlab.NodeAddr(f, 0), netlab.NodeAddr(f, 1), netlab.NodeAddr(f, 2)}
		if err := s.SetPaths(t.Context(), vipOf(f), hops); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// TestGracefulRestart kills a speaker process with graceful restart on: the
// router keeps its routes, and a new speaker from the same address takes
// them over (with a changed set of next hops) without the kernel route ever
// being deleted.
func TestGracefulRestart(t *testing.T) {
	lab := netlab.New(t, netlab.Options{Nodes: 3, Speakers: 1})
	ctx := waitCtx(t)

	childLog := filepath.Join(t.TempDir(), "child.log")
	logFile, err := os.Create(childLog) //nolint:gosec // in the test's temporary folder
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = logFile.Close() }()
	child := exec.Command(os.Args[0], "-test.run=^TestGracefulRestartChild$", "-test.count=1", "-test.v") //nolint:gosec // the test binary itself
	child.Env = append(os.Environ(), grChildEnv+"=1")
	child.Stdout, child.Stderr = logFile, logFile
	child.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	kill := func() {
		if !killed {
			killed = true
			_ = child.Process.Kill() // by PID
			_ = child.Wait()
		}
	}
	t.Cleanup(func() {
		kill()
		if t.Failed() {
			b, _ := os.ReadFile(childLog) //nolint:gosec // in the test's temporary folder
			t.Logf("speaker process output:\n%s", b)
		}
	})
	for _, f := range families {
		if err := lab.WaitRoute(ctx, vipOf(f), lab.NodeAddrs(f)); err != nil {
			t.Fatal(err)
		}
	}

	// Watch the router's kernel routes from before the kill to the end.
	monitor, err := framework.StartProcess("ip-monitor", filepath.Join(t.TempDir(), "monitor.log"), false,
		"ip", "-n", lab.Router, "monitor", "route")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { monitor.Stop(time.Second) })
	if err := lab.WaitEstablished(ctx, lab.SpeakerAddrs(netlab.IPv4)[0], lab.SpeakerAddrs(netlab.IPv6)[0]); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // let ip monitor subscribe

	kill()
	if err := waitSessionsDown(ctx, lab); err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		r, ok, err := lab.Route(vipOf(f))
		if err != nil {
			t.Fatal(err)
		}
		if !ok || !slices.Equal(r.NextHops, lab.NodeAddrs(f)) {
			t.Fatalf("IPv%d route after the speaker died: %v (present %v), want it kept via %v", f, r, ok, lab.NodeAddrs(f))
		}
	}

	// The new speaker announces nodes 1 and 2 only; paths go in before the
	// peers.
	s, err := New(grConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if err := s.SetPaths(ctx, vipOf(f), lab.NodeAddrs(f)[1:]); err != nil {
			t.Fatal(err)
		}
	}
	errc := make(chan error, 1)
	go func() { errc <- s.Start(ctx) }()
	t.Cleanup(func() {
		s.Stop()
		if err := <-errc; err != nil {
			t.Errorf("Start: %v", err)
		}
	})
	for _, f := range families {
		if err := lab.WaitRoute(ctx, vipOf(f), lab.NodeAddrs(f)[1:]); err != nil {
			t.Fatal(err)
		}
	}
	monitor.Stop(time.Second)
	for _, line := range strings.Split(monitor.Log(), "\n") {
		for _, f := range families {
			if strings.HasPrefix(line, "Deleted "+vipOf(f).Addr().String()+" ") {
				t.Errorf("the kernel route was deleted during the restart: %q\nall events:\n%s", line, monitor.Log())
			}
		}
	}
}

// waitSessionsDown waits until the router has no established session with
// the lab's speaker address 0.
func waitSessionsDown(ctx context.Context, lab *netlab.Lab) error {
	for {
		states, err := lab.SessionStates()
		if err == nil && states[netlab.SpeakerAddr(netlab.IPv4, 0)] != "Established" && states[netlab.SpeakerAddr(netlab.IPv6, 0)] != "Established" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("router sessions still up (%v): %w", states, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
