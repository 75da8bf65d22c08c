package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// The BFD scenario measures what BFD (pkg/bgp/bfd, 300 ms × 3, the
// default profile) costs a node agent with two BGP peers and a replica with
// BFDPeers: each process idles once with BFD off (the floor) and once with
// it on, its sessions up with a real peer, and the difference is BFD's.
//
// Everything is on the loopback of one network namespace the scenario
// creates: the measured process's address (bfdBlock's, its first) and its
// peers' (the next ones), where the BGP ports are closed (the speakers
// retry their sessions, in both runs alike) and a bfdpeer process
// (test/bench/cmd/bfdpeer: sessions of the same package, one per peer
// address) answers BFD. Packets on a loopback keep their TTL of 255, so the
// sessions are single hop (RFC 5881) as with a directly connected router.
// The namespace has no route but its loopback: nothing leaves the machine.
var bfdBlock = netip.MustParsePrefix("198.18.115.1/24")

const (
	// bfdAgentSessions is the node agent's peers (two ToRs, or two edge
	// routers), each with BFD when on.
	bfdAgentSessions = 2
	// goalBFDPeers is the replica's peers the goal is stated for.
	goalBFDPeers = 50
	// maxBFDPeers: the block's addresses after the measured process's,
	// short of its broadcast address.
	maxBFDPeers = 253
	// The goals (issue 32): on − off, % of one core.
	bfdAgentGoalPct   = 0.5
	bfdReplicaGoalPct = 2
	// bfdWarmup is how long a process runs after its sessions are up (or,
	// BFD off, after it serves its metrics) before it is measured.
	bfdWarmup = 10 * time.Second
	// bfdBGPPort is the peers' BGP port: closed in the namespace.
	bfdBGPPort = 179
)

// bfdNetNSName is the scenario's namespace, named per harness process.
func bfdNetNSName() string { return fmt.Sprintf("mccm-bench-bfd-%d", os.Getpid()) }

// bfdCost is scenario 0f: the node agent with BFD off and on, then a
// replica with BFDPeers peers, BFD off and on. It runs after scenario 0e,
// and registers one node, the agent's, which it deletes after.
func (e *env) bfdCost(ctx context.Context, s *Scenario) error {
	node, ip := "bfd-agent", bfdBlock.Addr()
	return runIdle(ctx, e, s, idleScenario[*bfdLab]{
		name: "bfd", unavailable: e.agentUnavailable, nodes: []string{node},
		start: func() (*bfdLab, error) { return startBFDLab(e) },
		setup: func(ctx context.Context) error {
			if _, err := e.registerNodes(ctx, []string{node}, []netip.Addr{ip}, true); err != nil {
				return err
			}
			return e.waitInitialized(ctx, []string{node})
		},
		setupTitle: "(setup: the agent's node initialized and the BFD peer built in)",
		timeStart:  true,
		measure: func(ctx context.Context, s *Scenario, lab *bfdLab) error {
			return e.bfdFigures(ctx, s, lab, node)
		},
	})
}

// bfdFigures measures the four processes and adds their figures.
func (e *env) bfdFigures(ctx context.Context, s *Scenario, lab *bfdLab, node string) error {
	var runs [2][2]bfdRun // [agent, replica][off, on]
	for i, replica := range []bool{false, true} {
		for j, on := range []bool{false, true} {
			r, err := e.measureBFD(ctx, lab, node, replica, on)
			if err != nil {
				return fmt.Errorf("%s, BFD %s: %w", bfdRole(replica), onOff(on), err)
			}
			runs[i][j] = r
		}
	}
	agent, replica := runs[0], runs[1]
	scaled := e.o.BFDPeers < goalBFDPeers
	s.add("agent_cpu_pct", "node agent CPU, % of one core (BFD on; floor: off)", agent[1].cpuPct, "%").withFloor(agent[0].cpuPct)
	s.add("agent_bfd_cpu_pct", fmt.Sprintf("CPU BFD costs the node agent (on − off), %d sessions, %% of one core", bfdAgentSessions),
		agent[1].cpuPct-agent[0].cpuPct, "%").
		atMost(bfdAgentGoalPct, fmt.Sprintf("< %.1f%% with %d sessions at 300 ms × 3", bfdAgentGoalPct, bfdAgentSessions), false)
	s.add("agent_sessions_up", "the agent's BFD sessions up at the end", agent[1].up, "count")
	s.add("agent_rss_mib", "node agent RSS at the end (BFD on; floor: off)", mib(agent[1].rss), "MiB").withFloor(mib(agent[0].rss))
	s.add("replica_cpu_pct", "replica CPU, % of one core (BFD on; floor: off)", replica[1].cpuPct, "%").withFloor(replica[0].cpuPct)
	cost := replica[1].cpuPct - replica[0].cpuPct
	s.add("replica_bfd_cpu_pct", fmt.Sprintf("CPU BFD costs the replica (on − off), %d peers, %% of one core", e.o.BFDPeers), cost, "%").
		atMost(bfdReplicaGoalPct, fmt.Sprintf("< %d%% with %d peers", bfdReplicaGoalPct, goalBFDPeers), scaled)
	s.add("replica_sys_cpu_pct", "of which in the kernel (system time), % of one core (BFD on; floor: off)", replica[1].sysPct, "%").withFloor(replica[0].sysPct)
	s.add("replica_sessions_up", "the replica's BFD sessions up at the end", replica[1].up, "count")
	s.add("replica_rss_mib", "replica RSS at the end (BFD on; floor: off)", mib(replica[1].rss), "MiB").withFloor(mib(replica[0].rss))
	s.notef("each process in the scenario's network namespace, idle for %s after a warm-up of %s, BFD off then on "+
		"(the default profile, 300 ms × 3); its BGP peers are closed ports there (the speakers retry, alike in both runs); "+
		"the BFD peer is one bfdpeer process (pkg/bgp/bfd) with a session from each peer address; "+
		"the replica runs beside the run's CCM, which leads", e.o.BFDIdle, min(bfdWarmup, e.o.BFDIdle))
	return nil
}

func bfdRole(replica bool) string {
	if replica {
		return "replica"
	}
	return "node agent"
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// bfdRun is what one measured process did while idle.
type bfdRun struct {
	cpuPct, sysPct float64
	rss            uint64
	up             float64
}

// measureBFD starts the agent (replica false) or a replica with BFD on or
// off, with the BFD peer when on; waits until every session is up (off:
// until it serves its metrics), lets it warm up, watches it for BFDIdle and
// stops both by PID.
func (e *env) measureBFD(ctx context.Context, lab *bfdLab, node string, replica, on bool) (bfdRun, error) {
	var r bfdRun
	peers := bfdAgentSessions
	if replica {
		peers = e.o.BFDPeers
	}
	name := fmt.Sprintf("bfd-%s-%s", map[bool]string{false: "agent", true: "replica"}[replica], onOff(on))
	cfg, err := lab.cloudConfig(name, replica, peers, on)
	if err != nil {
		return r, err
	}
	if on {
		peer, err := lab.startPeer(name, peers)
		if err != nil {
			return r, err
		}
		defer peer.Stop(10 * time.Second)
	}
	var p *framework.Process
	var metrics func(context.Context) (string, error)
	upMetric := "metal_ccm_agent_bgp_bfd_session_up"
	if replica {
		upMetric = "metal_ccm_bgp_bfd_session_up"
		p, err = lab.startReplica(name, cfg)
		metrics = lab.metrics
	} else {
		p, err = e.startMeasuredAgent(name, name+".log", lab.ns, node, lab.kubeconfig, cfg)
		metrics = lab.agentMetrics
	}
	if err != nil {
		return r, err
	}
	defer p.Stop(10 * time.Second)
	e.log.Info("Started a process in the BFD namespace", "name", name, "peers", peers, "bfd", on)
	up := func(ctx context.Context) (float64, error) {
		text, err := metrics(ctx)
		if err != nil {
			return 0, err
		}
		return promSum(text, upMetric, nil), nil
	}
	var exited error
	if err := e.waitForEvery(ctx, time.Second, name+" sessions up", func() (bool, string) {
		if p.Exited() {
			exited = errors.New("bench: " + name + " exited; see " + p.LogPath)
			return true, ""
		}
		n, err := up(ctx)
		if err != nil {
			return false, err.Error()
		}
		if !on {
			return true, ""
		}
		return n == float64(peers), fmt.Sprintf("%.0f of %d BFD sessions up", n, peers)
	}); err != nil {
		return r, err
	}
	if exited != nil {
		return r, exited
	}
	select {
	case <-ctx.Done():
		return r, fmt.Errorf("bench: %w", ctx.Err())
	case <-time.After(min(bfdWarmup, e.o.BFDIdle)):
	}
	stopProfile := func() {}
	if replica && e.o.PprofDir != "" { // the agent serves no /debug/pprof
		stopProfile = lab.profileCPU(ctx, e, name+"-idle", min(e.o.PprofSeconds, int(e.o.BFDIdle.Seconds())))
	}
	idle, err := e.watchIdleAgent(ctx, p, 0, e.o.BFDIdle)
	stopProfile()
	if err != nil {
		return r, err
	}
	r = bfdRun{cpuPct: idle.cpuPct, sysPct: idle.sysPct, rss: idle.rss}
	// Read after the CPU sample: the scrape is the harness's, not idle work.
	if r.up, err = up(ctx); err != nil {
		return r, err
	}
	if on && r.up != float64(peers) {
		return r, fmt.Errorf("bench: %s: %.0f of %d BFD sessions up at the end of the idle time", name, r.up, peers)
	}
	e.log.Info("Measured", "name", name, "cpuPct", r.cpuPct, "rssMiB", mib(r.rss), "sessionsUp", r.up)
	return r, nil
}

// bfdLab is the scenario's namespace, its API relay and the BFD peer's
// executable.
type bfdLab struct {
	*benchNetNS
	peerBin string
}

// startBFDLab makes the namespace with bfdBlock on its loopback and builds
// the BFD peer. On error nothing is left.
func startBFDLab(e *env) (lab *bfdLab, err error) {
	// The client's timeout outlasts a CPU profile (-pprof-seconds).
	n, err := startBenchNetNS(e, bfdNetNSName(), bfdBlock, 2*time.Minute)
	if err != nil {
		return nil, err
	}
	lab = &bfdLab{benchNetNS: n, peerBin: filepath.Join(e.o.Dir, "bfdpeer")}
	defer func() {
		if err != nil {
			n.close()
		}
	}()
	cmd := exec.Command("go", "build", "-o", lab.peerBin, "./test/bench/cmd/bfdpeer") //nolint:gosec // the output path is the run directory's
	cmd.Dir = framework.RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		return lab, fmt.Errorf("bench: build the BFD peer: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return lab, nil
}

// peerAddr is the address of peer i (from 0): the block's, after the
// measured process's.
func peerAddr(i int) netip.Addr {
	a := bfdBlock.Addr()
	for range i + 1 {
		a = a.Next()
	}
	return a
}

// startPeer runs the BFD peer in the namespace: a session with the measured
// process from each of the first n peer addresses.
func (lab *bfdLab) startPeer(name string, n int) (*framework.Process, error) {
	args := []string{"--net=" + filepath.Join("/run/netns", lab.ns), "--", lab.peerBin,
		"-remote", bfdBlock.Addr().String(), "-first", peerAddr(0).String(), "-count", strconv.Itoa(n),
		"-interval", "300ms", "-multiplier", "3"}
	p, err := framework.StartProcess(name+"-peer", filepath.Join(lab.e.o.Dir, "logs", name+"-peer.log"), false, "nsenter", args...)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	return p, nil
}

// startReplica starts a replica in the namespace with cloud-config cfg.
func (lab *bfdLab) startReplica(name, cfg string) (*framework.Process, error) {
	bin, err := framework.Binary("metal-cloud-controller-manager")
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	// The flags of scenario 0's replicas (measureReplica).
	args := []string{"--net=" + filepath.Join("/run/netns", lab.ns), "--", bin,
		"--kubeconfig", lab.kubeconfig, "--authentication-kubeconfig", lab.kubeconfig, "--authorization-kubeconfig", lab.kubeconfig,
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(healthSecurePort),
		"--cert-dir", filepath.Join(lab.e.o.Dir, name+"-certs"), "--v", "2", "--cloud-config", cfg}
	p, err := framework.StartProcess(name, filepath.Join(lab.e.o.Dir, "logs", name+".log"), false, "nsenter", args...)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	return p, nil
}

// cloudConfig writes the config of the agent (announceFrom Nodes: no
// localAddress or routerID, the node's address is the kernel's choice
// toward the peers, bfdBlock's) or of a replica (the block's address as
// router ID and local address): peers on closed BGP ports, BFD with the
// default profile when on, no health checks.
func (lab *bfdLab) cloudConfig(name string, replica bool, peers int, on bool) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: metal-ccm.io/v1alpha1
kind: CloudConfig
loadBalancer:
  pools:
  - name: bench
    addresses: [%s]
bgp:
  asn: %d
`, lbPool, netlab.DefaultSpeakerASN)
	if replica {
		fmt.Fprintf(&b, "  routerID: %s\n", bfdBlock.Addr())
	} else {
		b.WriteString("  announceFrom: Nodes\n")
	}
	b.WriteString("  peers:\n")
	for i := range peers {
		fmt.Fprintf(&b, "  - address: %s\n    port: %d\n    asn: %d\n    holdTime: 9s\n", peerAddr(i), bfdBGPPort, netlab.DefaultRouterASN)
		if replica {
			fmt.Fprintf(&b, "    localAddress: %s\n", bfdBlock.Addr())
		}
		if on {
			b.WriteString("    bfd: {}\n")
		}
	}
	b.WriteString("healthChecks:\n  enabled: false\n")
	path := filepath.Join(lab.e.o.Dir, name+"-cloud-config.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		return "", fmt.Errorf("bench: write cloud-config: %w", err)
	}
	return path, nil
}

// agentMetrics reads the node agent's /metrics (plain HTTP on
// agentStatusPort in the namespace).
func (n *benchNetNS) agentMetrics(ctx context.Context) (string, error) {
	url := "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(agentStatusPort)) + "/metrics"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", fmt.Errorf("bench: %w", err)
	}
	resp, err := n.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("bench: agent /metrics: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("bench: agent /metrics: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("bench: agent /metrics: %s", resp.Status)
	}
	return string(body), nil
}
