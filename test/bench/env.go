package bench

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// Address plan of a run; every address is in 198.18.0.0/15. The router lab
// (test/netlab) uses 198.18.10.0/24 and 198.18.20.0/24.
var (
	joinNodeBase   = netip.MustParseAddr("198.18.32.0") // 198.18.32.0/19: node-join storm
	steadyNodeBase = netip.MustParseAddr("198.18.64.0") // 198.18.64.0/19: steady state
)

const (
	maxJoinNodes   = 8192
	maxSteadyNodes = 8192
	// lbPool holds the LoadBalancer addresses, serviceCIDR the ClusterIPs.
	lbPool = "198.18.128.0/18"
	// steadyL2Pool is scenario 5's L2 pool (-steady-l2-services): a
	// range no bench address uses (the pod CIDR of the other suites).
	steadyL2Pool, steadyL2PoolName = "198.19.100.0/22", "bench-l2"
	maxSteadyL2Services            = 1000
	serviceCIDR                    = "198.18.192.0/18"
	maxServices                    = 16000
	// labNodes are registered at the router lab's node addresses, so the
	// router can install their routes; one more joins and leaves in the
	// node churn.
	labNodes = 4
	// harnessQPS and harnessBurst keep the harness's own client from
	// pacing the storms it drives.
	harnessQPS   = 2000
	harnessBurst = 4000
	// harnessWorkers is how many requests the harness has in flight.
	harnessWorkers = 32
)

// env is one run's control plane, CCM, router and clients.
type env struct {
	o       Options
	log     logr.Logger
	cp      *framework.ControlPlane
	cs      kubernetes.Interface // the harness's client
	floorCS kubernetes.Interface // the floor's client, with the CCM's limits
	token   string               // the admin's bearer token, for the CCM's /debug/pprof
	ccm     *framework.CCM
	ccmName string
	lab     *netlab.Lab
	// noRouter says why there is no router (empty when there is one).
	noRouter string
	w        *watcher
	stopW    context.CancelFunc

	labReady  bool
	lbKeys    []string // the LoadBalancer storm's Services, the churn's load
	localKeys []string // the endpoint churn's Services
	floors    floors   // of the storms, measured before the CCM starts
	floorSeq  int
	// cfgPath and cfgBody are the CCM's cloud-config file and what the run
	// wrote there: a scenario that reloads another config (power) writes
	// this one back after.
	cfgPath, cfgBody string
}

// start brings up the control plane, the router (when asked for and
// possible), the CCM and the harness's watches. On error nothing is left
// running.
func start(ctx context.Context, o Options) (e *env, err error) {
	e = &env{o: o, log: o.Logger}
	defer func() {
		if err != nil {
			e.stop()
			e = nil
		}
	}()
	e.log.Info("Starting the control plane", "dir", o.Dir)
	e.cp, err = framework.StartControlPlane(ctx, framework.Options{Dir: o.Dir, ServiceCIDR: serviceCIDR, APIServerArgs: o.APIServerArgs})
	if err != nil {
		return e, fmt.Errorf("bench: %w", err)
	}
	if err := e.startRouter(); err != nil {
		return e, err
	}
	if err := e.clients(); err != nil {
		return e, err
	}
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	e.stopW = cancel
	if e.w, err = startWatcher(wctx, e.cs); err != nil {
		return e, err
	}
	if err := e.measureFloors(ctx); err != nil {
		return e, err
	}
	if err := e.startCCM(ctx); err != nil {
		return e, err
	}
	if e.lab != nil {
		ectx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := e.lab.WaitEstablished(ectx, netlab.SpeakerAddr(netlab.IPv4, 0)); err != nil {
			return e, fmt.Errorf("bench: BGP session with the router: %w", err)
		}
	}
	return e, nil
}

func (e *env) startRouter() error {
	if e.o.Router == RouterOff {
		e.noRouter = "-router=off"
		return nil
	}
	if err := netlab.Available(); err != nil {
		if e.o.Router == RouterOn {
			return fmt.Errorf("bench: router: %w", err)
		}
		e.noRouter = err.Error()
		return nil
	}
	e.log.Info("Starting the BIRD router lab")
	lab, err := netlab.Start(netlab.Options{Nodes: labNodes + 1, Speakers: 1, SecondRouter: e.o.Peers > 1, SecondRouterASN: netlab.DefaultRouterASN})
	switch {
	case err == nil:
		e.lab = lab
	case e.o.Router == RouterOn:
		return fmt.Errorf("bench: %w", err)
	default:
		// In auto mode a lab that cannot be built costs the router figures,
		// not the run; the table says why.
		e.log.Error(err, "No router: the lab did not start")
		e.noRouter = "the lab did not start: " + err.Error()
	}
	return nil
}

func (e *env) routerText() string {
	if e.lab != nil {
		return "BIRD 2 in network namespaces (root)"
	}
	return "none (" + e.noRouter + ")"
}

func (e *env) clients() error {
	base, err := e.cp.RESTConfig()
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	e.token = base.BearerToken
	client := func(qps float32, burst int) (kubernetes.Interface, error) {
		cfg := rest.CopyConfig(base)
		cfg.QPS, cfg.Burst = qps, burst
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, fmt.Errorf("bench: client: %w", err)
		}
		return cs, nil
	}
	if e.cs, err = client(harnessQPS, harnessBurst); err != nil {
		return err
	}
	e.floorCS, err = client(e.o.ClientQPS, e.o.ClientBurst)
	return err
}

// cloudConfig is the CCM's config: one pool, and Peers BGP peers. With the
// router lab, the first is the router and the second its second address (a
// session of its own, on netlab.SecondRouterPort); any more, and every peer
// without the lab, are closed ports on 127.0.0.1, so that the speaker and
// the announcer still do all their work (only a peer's sent state, and
// the sending, are missing without a session).
func (e *env) cloudConfig() (string, error) {
	var peers strings.Builder
	for i := range e.o.Peers {
		peer, local, port := netlab.RouterAddr(netlab.IPv4).String(), netlab.SpeakerAddr(netlab.IPv4, 0).String(), 179
		switch {
		case e.lab != nil && i == 1:
			peer, port = netlab.SecondRouterAddr(netlab.IPv4).String(), netlab.SecondRouterPort
		case e.lab == nil || i > 1:
			p, err := framework.FreePort()
			if err != nil {
				return "", fmt.Errorf("bench: %w", err)
			}
			peer, local, port = fmt.Sprintf("127.0.0.%d", 1+i), "127.0.0.1", p
		}
		fmt.Fprintf(&peers, `  - name: router-%d
    address: %s
    port: %d
    asn: %d
    localAddress: %s
    holdTime: 9s
`, i, peer, port, netlab.DefaultRouterASN, local)
	}
	var l2 string
	if e.o.SteadyL2Services > 0 {
		// The membership's key, as the chart makes one.
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return "", fmt.Errorf("bench: %w", err)
		}
		keyPath := filepath.Join(e.o.Dir, "l2.key")
		if err := os.WriteFile(keyPath, []byte(base64.StdEncoding.EncodeToString(key)), 0o600); err != nil {
			return "", fmt.Errorf("bench: write the L2 key: %w", err)
		}
		// No node is a candidate: the pool costs the replicas what it
		// costs them, and no agent or packet is needed.
		l2 = fmt.Sprintf(`  - name: %s
    addresses: [%s]
    autoAssign: false
    announce: [L2]
l2:
  secretFile: %s
  nodeSelector:
    matchLabels: {metal-ccm.io/bench-l2: none}
`, steadyL2PoolName, steadyL2Pool, keyPath)
	}
	body := fmt.Sprintf(`apiVersion: metal-ccm.io/v1alpha1
kind: CloudConfig
loadBalancer:
  pools:
  - name: bench
    addresses: [%s]
%sbgp:
  asn: %d
  routerID: %s
  peers:
%s# The bench's nodes run no kube-proxy and their addresses lead nowhere but
# the machine's default route: no health checks (scenario 0 measures them).
healthChecks:
  enabled: false
`, lbPool, l2, netlab.DefaultSpeakerASN, netlab.SpeakerAddr(netlab.IPv4, 0), peers.String())
	e.cfgPath, e.cfgBody = filepath.Join(e.o.Dir, "cloud-config.yaml"), body
	if err := os.WriteFile(e.cfgPath, []byte(body), 0o600); err != nil {
		return "", fmt.Errorf("bench: write cloud-config: %w", err)
	}
	return e.cfgPath, nil
}

// peersNote says which of the CCM's peers have a session (cloudConfig).
func (e *env) peersNote() string {
	if e.lab == nil {
		return "closed ports on 127.0.0.1 (no router lab)"
	}
	if e.o.Peers == 2 {
		return "the router's two addresses, a session with each"
	}
	return fmt.Sprintf("the router's two addresses, a session with each, and %d closed ports on 127.0.0.1", e.o.Peers-2)
}

// startCCM starts the replica, ours or BENCH_CCM_CMD's, with the same flags.
func (e *env) startCCM(ctx context.Context) error {
	cfg, err := e.cloudConfig()
	if err != nil {
		return err
	}
	e.ccmName = "metal-cloud-controller-manager (" + framework.BinDir() + ")"
	restore := func() {}
	if e.o.CCMCommand != "" {
		e.ccmName = e.o.CCMCommand
		if restore, err = useCommand(e.o.Dir, e.o.CCMCommand); err != nil {
			return err
		}
	}
	e.log.Info("Starting the CCM", "ccm", e.ccmName)
	e.ccm, err = e.cp.StartCCM(ctx, framework.CCMOptions{Name: "ccm", CloudConfig: cfg})
	restore()
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}

// useCommand makes framework.StartCCM run command in place of the built
// binary: a script named like the binary, which execs the command with the
// flags it is given (so the PID stays the CCM's), in a directory that
// METAL_CCM_BIN_DIR points to until restore is called.
func useCommand(dir, command string) (restore func(), err error) {
	bin := filepath.Join(dir, "ccm-command")
	if err := os.MkdirAll(bin, 0o750); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	script := "#!/bin/sh\nexec " + command + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "metal-cloud-controller-manager"), []byte(script), 0o700); err != nil { //nolint:gosec // an executable script
		return nil, fmt.Errorf("bench: %w", err)
	}
	old, had := os.LookupEnv("METAL_CCM_BIN_DIR")
	if err := os.Setenv("METAL_CCM_BIN_DIR", bin); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	return func() {
		if had {
			_ = os.Setenv("METAL_CCM_BIN_DIR", old)
		} else {
			_ = os.Unsetenv("METAL_CCM_BIN_DIR")
		}
	}, nil
}

// stop stops what start started, by PID, and deletes the lab's namespaces.
func (e *env) stop() {
	if e.stopW != nil {
		e.stopW()
	}
	if e.ccm != nil {
		e.ccm.Stop(10 * time.Second)
	}
	if e.lab != nil {
		if err := e.lab.Close(); err != nil {
			e.log.Error(err, "Closing the router lab")
		}
	}
	if e.cp != nil {
		e.cp.Stop()
	}
}

// ccmAlive fails when the CCM has exited.
func (e *env) ccmAlive() error {
	if e.ccm != nil && e.ccm.Exited() {
		return errors.New("the CCM exited; see " + e.ccm.LogPath)
	}
	return nil
}
