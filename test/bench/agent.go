package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// The node agent scenario measures what one metal-node-agent costs its node
// when the cluster is large and idle: its RSS and CPU, and the paths it
// holds (one per address its node carries, not one per node).
//
// The agent runs as one of the scenario's nodes in a network namespace the
// scenario creates, as scenario 0's replicas do: the namespace has its
// loopback and that node's InternalIP (the agent's BGP router ID) and no
// other route, so the agent cannot send anything off the machine; the API
// server is relayed into it. Its one BGP peer is a closed port on that
// loopback: the speaker keeps retrying, and the announcer still gives it one
// path per address (pkg/agent starts the announcer whatever the sessions'
// state), which is what the goal is about. The other nodes' InternalIPs are
// never dialled; they are from the same block, which nothing else in the
// repository uses.
var agentBlock = netip.MustParsePrefix("198.18.116.0/22")

const (
	// maxAgentNodes: the block's addresses from .1, short of its last.
	maxAgentNodes = 1022
	// goalAgentNodes and goalAgentServices are the size the goal is stated
	// for (issue 15).
	goalAgentNodes    = 1000
	goalAgentServices = 2000
	// The goals: RSS < 40 MiB (64 until issue 34), its executable < 50
	// MB, and idle CPU < 1% of a core per agent.
	agentGoalRSSMiB = 40
	agentGoalExeMB  = 50
	agentGoalCPUPct = 1
	// agentWarmup is how long the agent runs after it holds every path
	// before it is measured: its first reconnect attempts and the garbage
	// of its initial lists are behind it by then.
	agentWarmup = 10 * time.Second
	// agentStatusPort is the agent's /metrics (its default
	// --bind-address); in the scenario's own namespace it is free.
	agentStatusPort = 10263
	// agentBGPPort is the agent's peer: a closed port on the namespace's
	// loopback.
	agentBGPPort = 179
)

// agentNetNSName is the scenario's namespace, named per harness process so
// that concurrent runs on one machine do not meet.
func agentNetNSName() string { return fmt.Sprintf("mccm-bench-ag-%d", os.Getpid()) }

// agentUnavailable says why the scenario cannot run here, or "".
func (e *env) agentUnavailable() string {
	switch {
	case !e.ours():
		return "BENCH_CCM_CMD: the node agent is metal-ccm's own"
	case os.Geteuid() != 0:
		return "needs root (the agent runs in a network namespace)"
	}
	return e.healthUnavailable() // the same tools (ip, nsenter)
}

// nodeAgent is the node agent scenario: AgentNodes Ready nodes and
// AgentServices LoadBalancer Services, addressed by the run's CCM, then one
// metal-node-agent (announceFrom: Nodes) as the first node, idle: its RSS,
// CPU and paths. It runs before scenario 1, so that its nodes and Services
// are the only ones (every Service's address then has the agent's node
// eligible), and deletes them after.
func (e *env) nodeAgent(ctx context.Context, s *Scenario) error {
	names, ips := nodeSet("agent", agentBlock.Addr().Next(), e.o.AgentNodes)
	keys := serviceKeys("bench-agent", "agent", e.o.AgentServices)
	return runIdle(ctx, e, s, idleScenario[*agentLab]{
		name: "agent", unavailable: e.agentUnavailable, nodes: names, services: keys,
		start: func() (*agentLab, error) { return startAgentLab(e, agentNetNSName(), ips[0]) },
		setup: func(ctx context.Context) error {
			if _, err := e.registerNodes(ctx, names, ips, true); err != nil {
				return err
			}
			if _, err := e.createServices(ctx, keys, false); err != nil {
				return err
			}
			if err := e.waitInitialized(ctx, names); err != nil {
				return err
			}
			return e.waitAddresses(ctx, keys)
		},
		setupTitle: "(setup: nodes initialized and Services addressed in)",
		settle:     true,
		measure: func(ctx context.Context, s *Scenario, al *agentLab) error {
			return e.agentFigures(ctx, s, al, names[0])
		},
	})
}

// agentFigures measures the agent as node and adds its figures.
func (e *env) agentFigures(ctx context.Context, s *Scenario, al *agentLab, node string) error {
	r, err := e.measureAgent(ctx, al, node)
	if err != nil {
		return err
	}
	nodesScaled := e.o.AgentNodes < goalAgentNodes || e.o.AgentServices < goalAgentServices
	s.add("prefixes", "paths the agent holds (metal_ccm_agent_bgp_announced_prefixes)", r.prefixes, "count")
	s.add("rss_mib", "agent RSS at the end", mib(r.rss), "MiB").
		atMost(agentGoalRSSMiB, fmt.Sprintf("< %d MiB", agentGoalRSSMiB), nodesScaled)
	// Its size does not grow with the nodes: never scaled.
	agentExecutableFigure(s, r).atMost(agentGoalExeMB, fmt.Sprintf("< %d MB", agentGoalExeMB), false)
	agentMemoryFigures(s, r)
	s.add("cpu_pct", "agent CPU while idle, % of one core", r.cpuPct, "%").
		atMost(agentGoalCPUPct, fmt.Sprintf("< %d%%", agentGoalCPUPct), nodesScaled)
	s.add("sys_cpu_pct", "of which in the kernel (system time), % of one core", r.sysPct, "%")
	s.add("start_s", "agent started until it held every path", r.startup.Seconds(), "s")
	s.notef("one metal-node-agent as node %s, in the scenario's network namespace, idle for %s after a warm-up of %s; "+
		"its one BGP peer is a closed port there (the speaker retries; the announcer holds its paths all the same); "+
		"health checks off; the run's CCM, which leads, addresses the Services and announces from the replicas beside it",
		node, e.o.AgentIdle, min(agentWarmup, e.o.AgentIdle))
	return nil
}

// agentRun is what the measured agent did while idle.
type agentRun struct {
	cpuPct, sysPct    float64
	rss, rssPeak, hwm uint64
	prefixes          float64
	startup           time.Duration
	// anon and file split rss: the process's own memory (heap, stacks, the
	// runtime's) and the pages of its executable and libraries.
	anon, file uint64
	// exe is the size of the executable the process runs, in bytes.
	exe int64
	// heapMB and heapGoalMB are the live heap after the last collection
	// and the next goal, from gctrace (-1 when none was logged).
	heapMB, heapGoalMB float64
}

// startMeasuredAgent starts a node agent to measure as node in namespace
// ns, its status on 127.0.0.1:agentStatusPort there and gctrace in its log.
func (e *env) startMeasuredAgent(name, logName, ns, node, kubeconfig, cfg string) (*framework.Process, error) {
	p, err := framework.StartNodeAgent(framework.NodeAgentOptions{Name: name,
		LogPath: filepath.Join(e.o.Dir, "logs", logName), NetNS: ns, Node: node,
		Kubeconfig: kubeconfig, CloudConfig: cfg, Env: []string{"GODEBUG=gctrace=1"},
		Args: []string{"--bind-address", net.JoinHostPort("127.0.0.1", strconv.Itoa(agentStatusPort))}})
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	return p, nil
}

// measureAgent starts the agent as node in the namespace, waits until it
// holds a path per Service, lets it warm up, measures it for AgentIdle and
// stops it (by PID; the namespace goes by name in close).
func (e *env) measureAgent(ctx context.Context, al *agentLab, node string) (agentRun, error) {
	var r agentRun
	cfg, err := al.cloudConfig()
	if err != nil {
		return r, err
	}
	// The PID the harness measures is the agent's (StartNodeAgent execs).
	// GODEBUG=gctrace=1 has the runtime log each collection's live heap:
	// the agent has no /debug/pprof, and this says how much of its RSS is
	// heap without adding one.
	e.log.Info("Starting a node agent in the agent namespace", "node", node)
	started := time.Now()
	p, err := e.startMeasuredAgent("agent", "metal-node-agent.log", al.ns, node, al.kubeconfig, cfg)
	if err != nil {
		return r, err
	}
	defer p.Stop(10 * time.Second)
	want := float64(e.o.AgentServices)
	var exited error
	if err := e.waitForEvery(ctx, time.Second, "agent holds every path", func() (bool, string) {
		if exited = agentExited(p); exited != nil {
			return true, "" // no use waiting longer
		}
		n, err := al.prefixes(ctx)
		if err != nil {
			return false, err.Error()
		}
		return n == want, fmt.Sprintf("%.0f of %.0f paths", n, want)
	}); err != nil {
		return r, err
	}
	if exited != nil {
		return r, exited
	}
	startup := time.Since(started)
	if r, err = e.watchIdleAgent(ctx, p, min(agentWarmup, e.o.AgentIdle), e.o.AgentIdle); err != nil {
		return r, err
	}
	r.startup = startup
	// Read after the CPU sample: the scrape is the harness's, not idle work.
	if r.prefixes, err = al.prefixes(ctx); err != nil {
		return r, err
	}
	e.log.Info("Agent measured", "cpuPct", r.cpuPct, "rssMiB", mib(r.rss), "hwmMiB", mib(r.hwm), "prefixes", r.prefixes)
	return r, nil
}

// agentExited fails when the agent p has exited.
func agentExited(p *framework.Process) error {
	if p.Exited() {
		return errors.New("bench: the agent exited; see " + p.LogPath)
	}
	return nil
}

// watchIdleAgent lets the started agent p warm up for warmup, then watches
// it for idle: its CPU (of one core, and the kernel's part), its RSS at the
// end, the highest sampled and VmHWM, the anonymous and file-backed parts,
// and the last gctrace line of its log. The caller sets startup and what
// the agent holds.
func (e *env) watchIdleAgent(ctx context.Context, p *framework.Process, warmup, idle time.Duration) (agentRun, error) {
	var r agentRun
	select {
	case <-ctx.Done():
		return r, fmt.Errorf("bench: %w", ctx.Err())
	case <-time.After(warmup):
	}
	type at struct {
		t   time.Time
		st  framework.ProcStat
		sys time.Duration
	}
	read := func() (at, error) {
		a := at{t: time.Now()}
		var err error
		if a.st, err = framework.ReadProcStat(p.PID()); err != nil {
			return a, fmt.Errorf("bench: %w", err)
		}
		a.sys, err = systemCPU(p.PID())
		return a, err
	}
	before, err := read()
	if err != nil {
		return r, err
	}
	peak := before.st.RSS
	end := before.t.Add(idle)
	for left := time.Until(end); left > 0; left = time.Until(end) {
		select {
		case <-ctx.Done():
			return r, fmt.Errorf("bench: %w", ctx.Err())
		case <-time.After(min(left, rssEvery)):
		}
		st, err := framework.ReadProcStat(p.PID())
		if err != nil {
			return r, fmt.Errorf("bench: %w", err)
		}
		peak = max(peak, st.RSS)
	}
	after, err := read()
	if err != nil {
		return r, err
	}
	if err := agentExited(p); err != nil {
		return r, err
	}
	wall := after.t.Sub(before.t).Seconds()
	r.cpuPct = 100 * (after.st.CPU - before.st.CPU).Seconds() / wall
	r.sysPct = 100 * (after.sys - before.sys).Seconds() / wall
	r.rss, r.rssPeak, r.hwm = after.st.RSS, max(peak, after.st.RSS), after.st.PeakRSS
	if r.anon, r.file, err = smapsRollup(p.PID()); err != nil {
		return r, err
	}
	// The file the process runs, whatever path started it.
	exe, err := os.Stat(fmt.Sprintf("/proc/%d/exe", p.PID()))
	if err != nil {
		return r, fmt.Errorf("bench: %w", err)
	}
	r.exe = exe.Size()
	r.heapMB, r.heapGoalMB = lastGC(p.LogPath)
	return r, nil
}

// agentLab is the scenario's network namespace and its API relay.
type agentLab struct {
	*benchNetNS
	nodeIP netip.Addr
}

// startAgentLab makes the namespace ns with nodeIP on its loopback and the
// API server relayed there (startBenchNetNS): the node's address exists
// where its agent runs, as on a node. On error nothing is left.
func startAgentLab(e *env, ns string, nodeIP netip.Addr) (*agentLab, error) {
	n, err := startBenchNetNS(e, ns, netip.PrefixFrom(nodeIP, nodeIP.BitLen()), 10*time.Second)
	if err != nil {
		return nil, err
	}
	return &agentLab{benchNetNS: n, nodeIP: nodeIP}, nil
}

// cloudConfig writes the agent's config: announceFrom Nodes, one peer on a
// closed port of the namespace's loopback (no localAddress or routerID:
// both are refused with Nodes), no health checks (the bench's nodes run no
// kube-proxy; scenario 0 measures the checks).
func (al *agentLab) cloudConfig() (string, error) {
	body := fmt.Sprintf(`apiVersion: metal-ccm.io/v1alpha1
kind: CloudConfig
loadBalancer:
  pools:
  - name: bench
    addresses: [%s]
bgp:
  asn: %d
  announceFrom: Nodes
  peers:
  - address: 127.0.0.1
    port: %d
    asn: %d
    holdTime: 9s
healthChecks:
  enabled: false
`, lbPool, netlab.DefaultSpeakerASN, agentBGPPort, netlab.DefaultRouterASN)
	path := filepath.Join(al.e.o.Dir, "agent-cloud-config.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		return "", fmt.Errorf("bench: write cloud-config: %w", err)
	}
	return path, nil
}

// prefixes reads metal_ccm_agent_bgp_announced_prefixes from the agent.
func (al *agentLab) prefixes(ctx context.Context) (float64, error) {
	text, err := al.agentMetrics(ctx)
	if err != nil {
		return 0, err
	}
	return promSum(text, "metal_ccm_agent_bgp_announced_prefixes", nil), nil
}

// smapsRollup is the anonymous and file-backed parts of process pid's RSS
// (/proc/PID/smaps_rollup, in kB).
func smapsRollup(pid int) (anon, file uint64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("bench: %w", err)
	}
	var rss uint64
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "Rss:":
			rss = kb << 10
		case "Anonymous:":
			anon = kb << 10
		}
	}
	return anon, rss - min(anon, rss), nil
}

// gcLine matches gctrace's heap sizes: "4->4->2 MB, 5 MB goal".
var gcLine = regexp.MustCompile(`gc \d+ @.* (\d+)->(\d+)->(\d+) MB, (\d+) MB goal`)

// lastGC reads the last gctrace line of the agent's log: the live heap
// after that collection and the next goal, in MB (-1 without one).
func lastGC(logPath string) (live, goal float64) {
	b, err := os.ReadFile(logPath) //nolint:gosec // the harness's own log
	if err != nil {
		return -1, -1
	}
	m := gcLine.FindAllStringSubmatch(string(b), -1)
	if len(m) == 0 {
		return -1, -1
	}
	last := m[len(m)-1]
	live, _ = strconv.ParseFloat(last[3], 64)
	goal, _ = strconv.ParseFloat(last[4], 64)
	return live, goal
}
