package bench

import (
	"context"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"github.com/metal-ccm/metal-ccm/test/framework"
)

// The power-state scenario measures what a power-state source costs the
// leader and the BMCs (issue 31): PowerNodes nodes in the inventory, each
// with a Redfish BMC, a tenth of them NotReady. The node lifecycle
// controller (upstream's, in the leader) asks InstanceShutdown only about
// NotReady nodes, every --node-monitor-period; the bench runs no
// kube-controller-manager and no kubelet, so the nodes stay as registered.
// The run's CCM (reloading its cloud-config) idles with `source: redfish`,
// then with every BMC holding its requests past the source's timeout, then
// with `source: none`, the floor: the same nodes, last, so that their
// initialization is long over.

const (
	// goalPowerNodes is the size the figures are stated for (issue 31).
	goalPowerNodes = 5000
	maxPowerNodes  = maxSteadyNodes
	// powerGoalPct: the source on costs < 1% of a core over it off.
	powerGoalPct = 1
	// powerTimeout and powerCacheAge are the source's settings in the
	// scenario: the documented default cacheAge, and a timeout shorter
	// than the default 5s so that a window sees several questions time out
	// (a pass over timing-out BMCs scales with it).
	powerTimeout  = 2 * time.Second
	powerCacheAge = 10 * time.Second
	// nodeMonitorPeriod is upstream's default --node-monitor-period, which
	// the run's CCM keeps; its --concurrent-node-lifecycle-syncs is
	// upstream's default 1.
	nodeMonitorPeriod = 5 * time.Second
	// powerSyncGoal: with every BMC timing out, the controller's sync
	// period stays within this factor of the one with BMCs answering.
	powerSyncGoal = 1.5
)

// powerSource is the scenario: nodes and BMCs, then the three phases.
func (e *env) powerSource(ctx context.Context, s *Scenario) error {
	if !e.ours() {
		s.Skipped = "BENCH_CCM_CMD: the power-state source is metal-ccm's own cloud-config"
		return nil
	}
	n := e.o.PowerNodes
	notReady := max(1, n/10)
	// The steady state's block: its nodes are not there yet, and these are
	// deleted before it runs.
	names, ips := nodeSet("power", steadyNodeBase, n)
	began := time.Now()
	pl, err := startPowerLab(powerLabDir(e), notReady)
	if err != nil {
		return err
	}
	defer pl.close()
	// Deferred first, so that it runs after the nodes are deleted.
	defer e.restoreCloudConfig(ctx)
	settings := fmt.Sprintf("{timeout: %s, cacheAge: %s}", powerTimeout, powerCacheAge)
	if err := e.reloadConfig(ctx, pl.inventory("redfish", settings, names)); err != nil {
		return err
	}
	defer e.deleteScenarioObjects(ctx, "power", nil, names)
	if _, err := e.registerNodes(ctx, names[notReady:], ips[notReady:], true); err != nil {
		return err
	}
	if _, err := e.registerNodes(ctx, names[:notReady], ips[:notReady], false); err != nil {
		return err
	}
	if err := e.waitInitialized(ctx, names); err != nil {
		return err
	}
	first, err := e.powerSample(ctx, pl)
	if err != nil {
		return err
	}
	if err := e.waitFor(ctx, "every NotReady node's BMC asked", func() (bool, string) {
		_, asked, _ := pl.counts()
		return asked == int64(notReady), fmt.Sprintf("%d of %d BMCs asked", asked, notReady)
	}); err != nil {
		return err
	}
	s.add("setup_s", "(setup: BMCs served, nodes initialized, every NotReady node's BMC asked in)", time.Since(began).Seconds(), "s")
	// The nodes' initialization Events drain before the source is
	// measured, as before the floor.
	if _, err := e.settle(ctx); err != nil {
		return err
	}
	// A node is NotReady to the controller from its creation until its
	// status says Ready, and a pass works on the nodes as they were when it
	// began, so the Ready nodes' BMCs may be asked until a pass that began
	// after their registration has ended: counted from then.
	if err := e.waitFor(ctx, "a node lifecycle pass after the registrations", func() (bool, string) {
		cur, err := e.powerSample(ctx, pl)
		if err != nil {
			return false, err.Error()
		}
		return cur.passes >= first.passes+2, "no pass ended since"
	}); err != nil {
		return err
	}
	_, _, readyFrom := pl.counts()
	e.log.Info("Power-state source on: every BMC asked", "nodes", n, "notReady", notReady)
	stopProfile := e.profilePhase(ctx, "power-on")
	on, err := e.powerPhase(ctx, pl, e.o.PowerIdle, &first)
	stopProfile()
	if err != nil {
		return fmt.Errorf("source redfish: %w", err)
	}
	hung, err := e.powerHung(ctx, pl)
	if err != nil {
		return err
	}
	// Counted before the source is replaced: closing it ends every BMC's
	// session, the Ready nodes' endpoint's too (made while they
	// registered), with a DELETE.
	_, _, ready := pl.counts()
	// The floor last: the same nodes, settled, the source none.
	if err := e.reloadConfig(ctx, pl.inventory("none", "{}", names)); err != nil {
		return err
	}
	if _, err := e.settle(ctx); err != nil {
		return err
	}
	stopProfile = e.profilePhase(ctx, "power-off")
	off, err := e.powerPhase(ctx, pl, e.o.PowerIdle, nil)
	stopProfile()
	if err != nil {
		return fmt.Errorf("source none: %w", err)
	}
	powerFigures(s, n, notReady, off, on, hung, ready-readyFrom, e.o.PowerIdle)
	return nil
}

// powerHung makes every BMC hold its requests, waits until one is held
// (the cached answers have begun to expire), and measures; the BMCs answer
// again after.
func (e *env) powerHung(ctx context.Context, pl *powerLab) (powerPhase, error) {
	pl.hang(true)
	defer pl.hang(false)
	from, _, _ := pl.counts()
	if err := e.waitFor(ctx, "a BMC held a request", func() (bool, string) {
		total, _, _ := pl.counts()
		return total > from, "no request since the BMCs hang"
	}); err != nil {
		return powerPhase{}, err
	}
	e.log.Info("Every BMC holds its requests")
	hung, err := e.powerPhase(ctx, pl, e.o.PowerIdle, nil)
	if err != nil {
		return hung, fmt.Errorf("BMCs timing out: %w", err)
	}
	return hung, nil
}

// syncPeriod is the mean time between the ends of the controller's passes
// in a phase's window: the window itself when none ended.
func syncPeriod(p powerPhase) float64 {
	if p.passes > 0 {
		return p.wall / p.passes
	}
	return p.wall
}

// powerFigures adds the scenario's figures.
func powerFigures(s *Scenario, n, notReady int, off, on, hung powerPhase, ready int64, idle time.Duration) {
	scaled := n < goalPowerNodes
	s.add("cpu_pct", "CCM CPU, % of one core (source redfish; floor: none)", on.cpuPct, "%").withFloor(off.cpuPct)
	s.add("source_cpu_pct", "CPU the source costs (redfish − none), % of one core", on.cpuPct-off.cpuPct, "%").
		atMost(powerGoalPct, fmt.Sprintf("< %d%% of a core at %d nodes", powerGoalPct, goalPowerNodes), scaled)
	// Each BMC is asked at most once per cacheAge, and a window of W
	// holds at most ⌊W/cacheAge⌋+1 of its questions: the bound the
	// configuration sets, per minute.
	bound := float64(notReady) * (math.Floor(on.wall/powerCacheAge.Seconds()) + 1) * 60 / on.wall
	s.add("bmc_requests_per_min", "requests at the NotReady nodes' BMCs per minute (the BMCs' count)", on.bmcPerMin, "req/min").
		atMost(bound, fmt.Sprintf("≤ %.0f: %d BMCs, one question per cacheAge %s", bound, notReady, powerCacheAge), scaled)
	s.add("bmc_requests_bound_per_min", "bound the configuration sets (NotReady BMCs × (⌊window/cacheAge⌋+1) per window), per minute", bound, "req/min")
	s.add("ready_bmc_requests", "requests at the Ready nodes' BMCs, from a pass after their registration to the end of the timeouts", float64(ready), "count").
		atMost(0, "0: only NotReady nodes are asked", false)
	s.add("shutdown_calls_ps", "InstanceShutdown calls per second (source redfish; floor: none)", on.shutdownPS, "req/s").withFloor(off.shutdownPS)
	s.add("answers_cached_pct", "of the source's answers, from its cache, %", on.cachedPct, "%")
	if on.passes > 0 && off.passes > 0 {
		s.add("monitor_pass_s", "node lifecycle pass, mean (source redfish, from its first questions, logins included; floor: none)", on.passMean, "s").withFloor(off.passMean)
	}
	// The controller asks about its NotReady nodes one after the other
	// (--concurrent-node-lifecycle-syncs 1): its passes, from its own
	// histogram, and the time between their ends show whether a BMC that
	// does not answer holds it up. A window in which no pass ended is a
	// pass at least as long as the window.
	passHung := hung.wall
	if hung.passes > 0 {
		passHung = hung.passMean
	}
	s.add("monitor_pass_timeouts_s", "node lifecycle pass with every BMC timing out, mean (the controller's histogram; none ended: the window)", passHung, "s")
	s.add("sync_period_timeouts_s", "node lifecycle sync period with every BMC timing out: the window over the passes that ended in it (floor: BMCs answering)",
		syncPeriod(hung), "s").withFloor(syncPeriod(on)).ratioAtMost(powerSyncGoal, scaled)
	s.notef("the run's CCM, leading, idles %s with each of source none, redfish, and redfish with every BMC holding its requests; "+
		"source settings timeout %s, cacheAge %s, maxInFlight default; --node-monitor-period %s and --concurrent-node-lifecycle-syncs 1 (upstream's defaults)",
		idle, powerTimeout, powerCacheAge, nodeMonitorPeriod)
}

// profilePhase saves a CPU profile of the CCM over a phase's first
// seconds (with -pprof; both phases alike, so that the profiler's own cost
// is in the floor too); the returned func waits for it.
func (e *env) profilePhase(ctx context.Context, name string) func() {
	return e.profileCPU(ctx, name, min(e.o.PprofSeconds, int(e.o.PowerIdle.Seconds())))
}

// powerSample is what the scenario reads of the CCM and the BMCs at one
// moment.
type powerSample struct {
	at                         time.Time
	cpu                        time.Duration
	passes, passSeconds        float64
	shutdownCalls              float64
	questions, cached          float64
	bmcRequests, readyRequests int64
}

// powerPhase is what happened in one measured window.
type powerPhase struct {
	wall, cpuPct          float64
	passes, passMean      float64
	shutdownPS, bmcPerMin float64
	cachedPct             float64
}

func (e *env) powerSample(ctx context.Context, pl *powerLab) (powerSample, error) {
	text, err := e.ccmMetrics(ctx)
	if err != nil {
		return powerSample{}, err
	}
	st, err := framework.ReadProcStat(e.ccm.PID())
	if err != nil {
		return powerSample{}, fmt.Errorf("bench: %w", err)
	}
	s := powerSample{at: time.Now(), cpu: st.CPU}
	s.passes = promSum(text, "cloud_node_lifecycle_controller_monitor_nodes_duration_seconds_count", nil)
	s.passSeconds = promSum(text, "cloud_node_lifecycle_controller_monitor_nodes_duration_seconds_sum", nil)
	s.shutdownCalls = promSum(text, "cloud_node_lifecycle_controller_cloud_provider_calls_total", func(l string) bool {
		return strings.Contains(l, `operation="instance_shutdown"`)
	})
	s.questions = promSum(text, "metal_ccm_redfish_requests_total", nil)
	s.cached = promSum(text, "metal_ccm_redfish_cached_answers_total", nil)
	s.bmcRequests, _, s.readyRequests = pl.counts()
	return s, nil
}

// powerPhase samples, waits idle, samples again; the node lifecycle
// passes are counted from passesFrom when given (a window of a few seconds
// may hold none).
func (e *env) powerPhase(ctx context.Context, pl *powerLab, idle time.Duration, passesFrom *powerSample) (powerPhase, error) {
	a, err := e.powerSample(ctx, pl)
	if err != nil {
		return powerPhase{}, err
	}
	select {
	case <-ctx.Done():
		return powerPhase{}, fmt.Errorf("bench: %w", ctx.Err())
	case <-time.After(idle):
	}
	b, err := e.powerSample(ctx, pl)
	if err != nil {
		return powerPhase{}, err
	}
	if passesFrom == nil {
		passesFrom = &a
	}
	wall := b.at.Sub(a.at).Seconds()
	p := powerPhase{
		wall: wall, cpuPct: 100 * (b.cpu - a.cpu).Seconds() / wall,
		passes:     b.passes - passesFrom.passes,
		shutdownPS: (b.shutdownCalls - a.shutdownCalls) / wall,
		bmcPerMin:  float64(b.bmcRequests-a.bmcRequests) * 60 / wall,
	}
	if p.passes > 0 {
		p.passMean = (b.passSeconds - passesFrom.passSeconds) / p.passes
	}
	if answers := b.questions - a.questions + b.cached - a.cached; answers > 0 {
		p.cachedPct = 100 * (b.cached - a.cached) / answers
	}
	e.log.Info("Power phase measured", "cpuPct", p.cpuPct, "passes", p.passes, "passMean", p.passMean, "bmcPerMin", p.bmcPerMin)
	return p, nil
}

// reloadConfig writes the run's cloud-config with nodes (a nodes section)
// and waits until the CCM has applied it.
func (e *env) reloadConfig(ctx context.Context, nodes string) error {
	text, err := e.ccmMetrics(ctx)
	if err != nil {
		return err
	}
	success := func(t string) float64 {
		return promSum(t, "metal_ccm_config_reloads_total", func(l string) bool { return strings.Contains(l, `result="success"`) })
	}
	failure := func(t string) float64 {
		return promSum(t, "metal_ccm_config_reloads_total", func(l string) bool { return strings.Contains(l, `result="failure"`) })
	}
	before, failedBefore := success(text), failure(text)
	if err := os.WriteFile(e.cfgPath, []byte(e.cfgBody+nodes), 0o600); err != nil {
		return fmt.Errorf("bench: write cloud-config: %w", err)
	}
	return e.waitFor(ctx, "the cloud-config reloaded", func() (bool, string) {
		t, err := e.ccmMetrics(ctx)
		if err != nil {
			return false, err.Error()
		}
		if failure(t) > failedBefore {
			return false, "the reload was refused; see " + e.ccm.LogPath
		}
		return success(t) > before, "not reloaded yet"
	})
}

// restoreCloudConfig writes the run's own cloud-config back, with a
// context of its own (ctx may have ended), and logs what fails.
func (e *env) restoreCloudConfig(ctx context.Context) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.o.Timeout)
	defer cancel()
	if err := e.reloadConfig(rctx, ""); err != nil {
		e.log.Error(err, "Restoring the run's cloud-config")
	}
}
