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
	"sync/atomic"
	"time"

	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// The node health checks scenario measures what checking kube-proxy's
// /healthz on every node costs a replica: the same replica, in the same
// cluster, idles once with the checks off (the floor) and once with them on
// at the default interval, and the difference is what the checks cost.
//
// Its nodes' InternalIPs are a block no other test uses, made local to a
// network namespace the scenario creates (the block on that namespace's
// loopback, so one listener on 0.0.0.0 answers for every address), where
// one Go HTTP server plays every node's kube-proxy. The measured replicas
// run in that namespace too: it has no route but the block and its
// loopback, so no probe can leave the machine, even one to a node another
// scenario registered (it fails with "network unreachable"). The API
// server, on the host's loopback, is relayed into the namespace by the
// harness, as test/framework's real nodes do. The block is scenario 5's
// (steadyNodeBase), as scenario 0e's nodes are: scenario 0 runs first and
// deletes its nodes before any other scenario registers one.
var healthBlock = netip.MustParsePrefix("198.18.64.0/19")

const (
	// maxHealthNodes: the block's addresses from .1, short of its last
	// (the broadcast address the kernel makes for it).
	maxHealthNodes = 8190
	// goalHealthNodes is the size the goal is stated for (issue 34; issue 14
	// stated it for 1,000).
	goalHealthNodes = 5000
	// healthGoalPct: checking 5,000 nodes costs a replica < 5% of a core.
	healthGoalPct = 5
	// healthWarmup is how long a replica runs after its first round of
	// checks before it is measured: its informers have synced and its
	// speaker has tried its peer once by then.
	healthWarmup = 10 * time.Second
	// In the namespace, which is the scenario's own, fixed ports are free.
	healthSecurePort = 10258 // the replica's /metrics and /debug/pprof
	// healthBGPPort is the replica's BGP peer: a closed port on the
	// namespace's loopback. A peer is needed: without a backend the
	// announcer, and so the checker, does not run (pkg/metal/announce.go).
	healthBGPPort = 179
)

// healthNetNSName is where the scenario's namespace lives, named per harness
// process so that concurrent runs on one machine do not meet.
func healthNetNSName() string { return fmt.Sprintf("mccm-bench-hc-%d", os.Getpid()) }

// healthUnavailable says why the scenario cannot run here, or "".
func (e *env) healthUnavailable() string {
	switch {
	case !e.ours():
		return "BENCH_CCM_CMD: the health checks are metal-ccm's own cloud-config"
	case os.Geteuid() != 0:
		return "needs root (a network namespace plays the nodes' kube-proxies)"
	}
	for _, tool := range []string{"ip", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			return tool + " not found"
		}
	}
	return ""
}

// healthNodes is scenario 0: HealthNodes Ready nodes whose kube-proxy
// answers 200; a replica idles with the health checks off, then another
// with them on: their CPU and RSS, the probes sent. It runs first so that
// its nodes are the only ones, and deletes them before the others run.
func (e *env) healthNodes(ctx context.Context, s *Scenario) error {
	names, ips := nodeSet("health", healthBlock.Addr().Next(), e.o.HealthNodes)
	return runIdle(ctx, e, s, idleScenario[*healthLab]{
		name: "health", unavailable: e.healthUnavailable, nodes: names,
		start: func() (*healthLab, error) { return startHealthLab(e, healthNetNSName()) },
		setup: func(ctx context.Context) error {
			if _, err := e.registerNodes(ctx, names, ips, true); err != nil {
				return err
			}
			return e.waitInitialized(ctx, names)
		},
		setupTitle: "(setup: nodes initialized in)",
		measure:    e.measureHealthChecks,
	})
}

// measureHealthChecks measures a replica with the checks off, then one with
// them on, and adds their figures.
func (e *env) measureHealthChecks(ctx context.Context, s *Scenario, hl *healthLab) error {
	off, err := e.measureReplica(ctx, hl, false)
	if err != nil {
		return fmt.Errorf("checks off: %w", err)
	}
	on, err := e.measureReplica(ctx, hl, true)
	if err != nil {
		return fmt.Errorf("checks on: %w", err)
	}
	scaled := e.o.HealthNodes < goalHealthNodes
	httpInterval := fmt.Sprintf("the default %s", config.DefaultHealthCheckHTTPInterval)
	if d := e.o.HealthHTTPInterval; d > 0 {
		httpInterval = d.String()
		scaled = scaled || d != config.DefaultHealthCheckHTTPInterval
	}
	s.add("cpu_pct", "CCM CPU, % of one core (checks on; floor: off)", on.cpuPct, "%").withFloor(off.cpuPct)
	cost := on.cpuPct - off.cpuPct
	s.add("checks_cpu_pct", "CPU the checks cost (on − off), % of one core", cost, "%").
		atMost(healthGoalPct, fmt.Sprintf("< %d%% at %d nodes", healthGoalPct, goalHealthNodes), scaled)
	s.add("sys_cpu_pct", "of which in the kernel (system time), % of one core (checks on; floor: off)", on.sysPct, "%").withFloor(off.sysPct)
	s.add("rss_mib", "CCM RSS at the end (checks on; floor: off)", mib(on.rss), "MiB").withFloor(mib(off.rss))
	s.add("rss_max_mib", "CCM RSS, highest sampled while idle (checks on; floor: off)", mib(on.rssPeak), "MiB").withFloor(mib(off.rssPeak))
	s.add("probes_ps", "HTTP checks per second (the CCM's count)", on.probesPS, "req/s")
	s.add("pings_ps", "pings per second between them (the CCM's count)", on.pingsPS, "req/s")
	if on.probesPS+on.pingsPS > 0 {
		s.add("cpu_per_kprobe_pct", "CPU the checks cost per 1,000 checks/s (HTTP or ping), % of one core", 1000*cost/(on.probesPS+on.pingsPS), "%")
	}
	s.add("answers_ps", "/healthz answers served per second (the harness's count)", on.answersPS, "req/s")
	s.add("failed_probes", "failed HTTP checks while idle", on.failed, "count")
	s.add("failed_pings", "pings without a reply while idle", on.failedPings, "count")
	s.add("connections", "connections opened while idle (kept alive: 0)", on.conns, "count")
	s.add("healthy_targets", "targets healthy at the end", on.healthy, "count")
	s.notef("two replicas in turn, each in the scenario's network namespace and idle for %s after a warm-up of %s, both "+
		"beside the run's CCM, which leads (they run the announcer and the informers, not the leader's controllers); "+
		"the interval is the default %s, the HTTP interval %s (the namespace allows ping sockets, as most hosts do)",
		e.o.HealthIdle, min(healthWarmup, e.o.HealthIdle), config.DefaultHealthCheckInterval, httpInterval)
	return nil
}

// replicaRun is what one measured replica did while idle.
type replicaRun struct {
	cpuPct, sysPct   float64
	rss, rssPeak     uint64
	probesPS, failed float64
	pingsPS          float64
	failedPings      float64
	answersPS, conns float64
	healthy          float64
}

// measureReplica starts a replica in the namespace with the checks on or
// off, waits until it is idle, measures it for HealthIdle and stops it.
func (e *env) measureReplica(ctx context.Context, hl *healthLab, checks bool) (replicaRun, error) {
	var r replicaRun
	name := "health-off"
	if checks {
		name = "health-on"
	}
	cfg, err := hl.cloudConfig(name, checks)
	if err != nil {
		return r, err
	}
	bin, err := framework.Binary("metal-cloud-controller-manager")
	if err != nil {
		return r, fmt.Errorf("bench: %w", err)
	}
	// The flags of framework.StartCCM, which cannot be used here: it
	// waits for /healthz on the host's loopback.
	args := []string{"--net=" + filepath.Join("/run/netns", hl.ns), "--", bin,
		"--kubeconfig", hl.kubeconfig, "--authentication-kubeconfig", hl.kubeconfig, "--authorization-kubeconfig", hl.kubeconfig,
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(healthSecurePort),
		"--cert-dir", filepath.Join(e.o.Dir, name+"-certs"), "--v", "2", "--cloud-config", cfg}
	e.log.Info("Starting a replica in the health namespace", "name", name, "checks", checks)
	p, err := framework.StartProcess(name, filepath.Join(e.o.Dir, "logs", name+".log"), false, "nsenter", args...)
	if err != nil {
		return r, fmt.Errorf("bench: %w", err)
	}
	defer p.Stop(10 * time.Second)
	alive := func() error {
		if p.Exited() {
			return errors.New("bench: the replica exited; see " + p.LogPath)
		}
		return nil
	}
	want := float64(e.o.HealthNodes)
	var exited error
	if err := e.waitForEvery(ctx, time.Second, name+" ready", func() (bool, string) {
		if exited = alive(); exited != nil {
			return true, "" // no use waiting longer
		}
		text, err := hl.metrics(ctx)
		if err != nil {
			return false, err.Error()
		}
		if !checks {
			return true, ""
		}
		h := promSum(text, "metal_ccm_node_health_targets", func(l string) bool { return strings.Contains(l, `state="healthy"`) })
		return h == want, fmt.Sprintf("%.0f of %.0f targets healthy", h, want)
	}); err != nil {
		return r, err
	}
	if exited != nil {
		return r, exited
	}
	select {
	case <-ctx.Done():
		return r, fmt.Errorf("bench: %w", ctx.Err())
	case <-time.After(min(healthWarmup, e.o.HealthIdle)):
	}
	before, err := hl.sample(ctx, p.PID())
	if err != nil {
		return r, err
	}
	stopProfile := func() {}
	if e.o.PprofDir != "" {
		stopProfile = hl.profileCPU(ctx, e, name+"-idle", min(e.o.PprofSeconds, int(e.o.HealthIdle.Seconds())))
	}
	var peak uint64
	end := time.Now().Add(e.o.HealthIdle)
	for {
		st, err := framework.ReadProcStat(p.PID())
		if err != nil {
			stopProfile()
			return r, fmt.Errorf("bench: %w", err)
		}
		peak = max(peak, st.RSS)
		left := time.Until(end)
		if left <= 0 {
			break
		}
		select {
		case <-ctx.Done():
			stopProfile()
			return r, fmt.Errorf("bench: %w", ctx.Err())
		case <-time.After(min(left, rssEvery)):
		}
	}
	stopProfile()
	after, err := hl.sample(ctx, p.PID())
	if err != nil {
		return r, err
	}
	if err := alive(); err != nil {
		return r, err
	}
	wall := after.at.Sub(before.at).Seconds()
	r = replicaRun{
		cpuPct: 100 * (after.stat.CPU - before.stat.CPU).Seconds() / wall,
		sysPct: 100 * (after.sys - before.sys).Seconds() / wall,
		rss:    after.stat.RSS, rssPeak: max(peak, after.stat.RSS),
		probesPS:    (after.probes - before.probes) / wall,
		failed:      after.failed - before.failed,
		pingsPS:     (after.pings - before.pings) / wall,
		failedPings: after.failedPings - before.failedPings,
		answersPS:   float64(after.answers-before.answers) / wall,
		conns:       float64(after.conns - before.conns),
		healthy:     after.healthy,
	}
	e.log.Info("Replica measured", "name", name, "cpuPct", r.cpuPct, "rssMiB", mib(r.rss), "probesPerSecond", r.probesPS)
	return r, nil
}

// healthLab is the scenario's network namespace, its /healthz server and
// its relay of the API server.
type healthLab struct {
	*benchNetNS
	server *http.Server
	// answers and conns count the /healthz answers and the connections
	// the server accepted.
	answers, conns atomic.Int64
}

// startHealthLab makes the namespace ns with the block on its loopback and
// the API server relayed there (startBenchNetNS), and serves /healthz on
// port 10256 of every address. On error nothing is left.
func startHealthLab(e *env, ns string) (hl *healthLab, err error) {
	n, err := startBenchNetNS(e, ns, healthBlock, 2*time.Minute)
	if err != nil {
		return nil, err
	}
	hl = &healthLab{benchNetNS: n}
	defer func() {
		if err != nil {
			hl.close()
		}
	}()
	// Ping sockets allowed, as most hosts allow them (systemd's default);
	// a new namespace's default allows none.
	if out, err := exec.CommandContext(context.Background(), "ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv4.ping_group_range=0 2147483647").CombinedOutput(); err != nil { //nolint:gosec // the scenario's own namespace
		return hl, fmt.Errorf("bench: health: allow ping sockets: %w: %s", err, out)
	}
	ln, err := framework.ListenInNetNS(ns, "tcp", net.JoinHostPort("0.0.0.0", strconv.Itoa(config.DefaultHealthCheckPort)))
	if err != nil {
		return hl, fmt.Errorf("bench: health: %w", err)
	}
	hl.server = &http.Server{
		Handler:           http.HandlerFunc(hl.healthz),
		ReadHeaderTimeout: 10 * time.Second,
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				hl.conns.Add(1)
			}
		},
	}
	go func() { _ = hl.server.Serve(ln) }()
	return hl, nil
}

// healthz answers as kube-proxy does when its rules are in sync.
func (hl *healthLab) healthz(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/healthz" {
		http.NotFound(w, r)
		return
	}
	hl.answers.Add(1)
	now := time.Now().UTC().Format(time.RFC3339Nano)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = fmt.Fprintf(w, `{"lastUpdated": %q,"currentTime": %q, "nodeEligible": true}`, now, now)
}

// close stops the server, then the namespace.
func (hl *healthLab) close() {
	if hl.server != nil {
		_ = hl.server.Close()
	}
	hl.benchNetNS.close()
}

// cloudConfig writes a replica's config: the run's pool, a BGP peer on a
// closed port of the namespace's loopback, the checks on or off (their
// other settings the defaults).
func (hl *healthLab) cloudConfig(name string, checks bool) (string, error) {
	body := fmt.Sprintf(`apiVersion: metal-ccm.io/v1alpha1
kind: CloudConfig
loadBalancer:
  pools:
  - name: bench
    addresses: [%s]
bgp:
  asn: %d
  routerID: %s
  peers:
  - address: 127.0.0.1
    port: %d
    asn: %d
    localAddress: 127.0.0.1
    holdTime: 9s
healthChecks:
  enabled: %t
`, lbPool, netlab.DefaultSpeakerASN, netlab.SpeakerAddr(netlab.IPv4, 0), healthBGPPort, netlab.DefaultRouterASN, checks)
	if d := hl.e.o.HealthHTTPInterval; d > 0 {
		body += fmt.Sprintf("  httpInterval: %s\n", d)
	}
	path := filepath.Join(hl.e.o.Dir, name+"-cloud-config.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		return "", fmt.Errorf("bench: write cloud-config: %w", err)
	}
	return path, nil
}

// healthSample is what the scenario reads of a replica and its server.
type healthSample struct {
	at                      time.Time
	stat                    framework.ProcStat
	sys                     time.Duration // the system part of stat.CPU
	probes, failed, healthy float64
	pings, failedPings      float64
	answers, conns          int64
}

func (hl *healthLab) sample(ctx context.Context, pid int) (healthSample, error) {
	text, err := hl.metrics(ctx)
	if err != nil {
		return healthSample{}, err
	}
	s := healthSample{at: time.Now(), answers: hl.answers.Load(), conns: hl.conns.Load()}
	if s.stat, err = framework.ReadProcStat(pid); err != nil {
		return s, fmt.Errorf("bench: %w", err)
	}
	if s.sys, err = systemCPU(pid); err != nil {
		return s, err
	}
	s.probes = promSum(text, "metal_ccm_node_health_check_duration_seconds_count", nil)
	s.failed = promSum(text, "metal_ccm_node_health_check_duration_seconds_count", func(l string) bool { return strings.Contains(l, `result="fail"`) })
	s.pings = promSum(text, "metal_ccm_node_health_pings_total", nil)
	s.failedPings = promSum(text, "metal_ccm_node_health_pings_total", func(l string) bool { return strings.Contains(l, `result="fail"`) })
	s.healthy = promSum(text, "metal_ccm_node_health_targets", func(l string) bool { return strings.Contains(l, `state="healthy"`) })
	return s, nil
}

// metrics reads the replica's /metrics as the admin (a replica in the
// namespace serves on healthSecurePort).
func (n *benchNetNS) metrics(ctx context.Context) (string, error) {
	var b strings.Builder
	if err := n.get(ctx, "/metrics", &b); err != nil {
		return "", err
	}
	return b.String(), nil
}

// get fetches a path of the replica's secure port into w.
func (n *benchNetNS) get(ctx context.Context, path string, w io.Writer) error {
	url := "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(healthSecurePort)) + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+n.e.token)
	resp, err := n.client.Do(req)
	if err != nil {
		return fmt.Errorf("bench: %s: %w", path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("bench: %s: %s: %s", path, resp.Status, body)
	}
	if _, err := io.Copy(w, resp.Body); err != nil {
		return fmt.Errorf("bench: %s: %w", path, err)
	}
	return nil
}

// profileCPU saves a CPU profile of the replica over the next seconds as
// PprofDir/name.cpu.pb.gz; the returned func waits for it.
func (n *benchNetNS) profileCPU(ctx context.Context, e *env, name string, seconds int) func() {
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := func() error {
			if err := os.MkdirAll(e.o.PprofDir, 0o750); err != nil {
				return err
			}
			f, err := os.Create(filepath.Join(e.o.PprofDir, name+".cpu.pb.gz")) //nolint:gosec // under the output directory
			if err != nil {
				return err
			}
			err = n.get(ctx, fmt.Sprintf("/debug/pprof/profile?seconds=%d", max(1, seconds)), f)
			return errors.Join(err, f.Close())
		}()
		if err != nil {
			e.log.Error(err, "CPU profile", "name", name)
		}
	}()
	return func() { <-done }
}

// systemCPU is the CPU time process pid spent in the kernel (stime in
// /proc/PID/stat, in USER_HZ ticks of 10 ms): a probe is mostly a write and
// a read on a socket, so the split says how much of its cost is syscalls.
func systemCPU(pid int) (time.Duration, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("bench: %w", err)
	}
	// The fields after the command, which may hold spaces, in parentheses:
	// the state is field 3, stime field 15.
	i := strings.LastIndexByte(string(stat), ')')
	fields := strings.Fields(string(stat[i+1:]))
	if i < 0 || len(fields) < 13 {
		return 0, fmt.Errorf("bench: /proc/%d/stat: unexpected format", pid)
	}
	ticks, err := strconv.ParseInt(fields[12], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bench: /proc/%d/stat stime: %w", pid, err)
	}
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}

// ipCmd runs ip(8) with args.
func ipCmd(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput() //nolint:gosec // fixed tool, the harness's arguments
	if err != nil {
		return fmt.Errorf("bench: ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
