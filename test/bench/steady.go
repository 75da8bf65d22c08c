package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/metal-ccm/metal-ccm/pkg/annotation"
	"github.com/metal-ccm/metal-ccm/test/framework"
)

// rssEvery is how often the steady state samples the CCM's RSS.
const rssEvery = 5 * time.Second

// maxIdleLists is the most LIST requests an idle CCM may cause: one relist
// of each resource it watches (nodes, Services, EndpointSlices, the
// authentication ConfigMap) is no storm.
const maxIdleLists = 4

// steadyState is scenario 5: SteadyNodes nodes and SteadyServices
// LoadBalancer Services (the earlier scenarios' count), then nothing changes
// for SteadyIdle: the CCM's memory, CPU and API requests while idle.
func (e *env) steadyState(ctx context.Context, s *Scenario) error {
	if err := e.ensureLabNodes(ctx); err != nil {
		return err
	}
	names, ips := nodeSet("steady", steadyNodeBase, e.o.SteadyNodes)
	existing := append(append([]string{}, e.lbKeys...), e.localKeys...)
	keys := serviceKeys("bench-steady", "steady", max(0, e.o.SteadyServices-len(existing)))
	l2Keys := serviceKeys("bench-steady-l2", "l2", e.o.SteadyL2Services)
	began := time.Now()
	if _, err := e.registerNodes(ctx, names, ips, !e.o.SteadyNotReady); err != nil {
		return err
	}
	if len(keys) > 0 {
		if _, err := e.createServices(ctx, keys, false); err != nil {
			return err
		}
	}
	if len(l2Keys) > 0 {
		if _, err := e.createServices(ctx, l2Keys, false, framework.WithAnnotation(string(annotation.NamePool), steadyL2PoolName)); err != nil {
			return err
		}
		keys = append(keys, l2Keys...)
		s.notef("beside them, %d Services in an L2 pool (%s) that no node answers for (l2.nodeSelector selects none)", len(l2Keys), steadyL2Pool)
	}
	if err := e.waitInitialized(ctx, names); err != nil {
		return err
	}
	if err := e.waitAddresses(ctx, append(existing, keys...)); err != nil {
		return err
	}
	s.add("setup_s", "(setup: nodes initialized and Services addressed in)", time.Since(began).Seconds(), "s")
	if err := e.addDuplicates(ctx, s); err != nil {
		return err
	}
	// The leader writes each new Service's conditions once the addresses
	// are written: the idle time starts after them.
	drain := time.Now()
	before, err := e.settleWithin(ctx, statusDrainMax)
	if err != nil {
		return err
	}
	s.add("status_drain_s", "(then the Services' conditions written in)", time.Since(drain).Seconds(), "s")
	e.log.Info("Idle", "for", e.o.SteadyIdle)
	stopProfile := e.profileCPU(ctx, ScenarioSteady+"-idle", min(e.o.PprofSeconds, int(e.o.SteadyIdle.Seconds())))
	peak, err := e.idle(ctx)
	stopProfile()
	if err != nil {
		return err
	}
	after, err := e.sample(ctx)
	if err != nil {
		return err
	}
	d := before.to(after)
	scaled := e.o.SteadyNodes < goalSteadyNodes || e.o.SteadyServices < goalSteadyServices
	idle := d.wall.Seconds()
	s.add("rss_mib", "CCM RSS at the end", mib(after.ccm.RSS), "MiB").atMost(300, "< 300 MiB", scaled)
	s.add("rss_max_mib", "CCM RSS, highest sampled while idle", mib(peak), "MiB")
	s.add("rss_hwm_mib", "CCM RSS, highest since start (VmHWM)", mib(after.ccm.PeakRSS), "MiB")
	s.add("rss_anon_mib", "(of the RSS at the end: anonymous, the heap and stacks)", mib(after.ccm.AnonRSS), "MiB")
	s.add("rss_file_mib", "(of the RSS at the end: file-backed, the binary's pages)", mib(after.ccm.FileRSS), "MiB")
	s.add("cpu_pct", "CCM CPU, % of one core", 100*d.ccmCPU.Seconds()/idle, "%").atMost(5, "< 5%", scaled)
	s.add("api_rps", "CCM API requests per second", d.requests/idle, "req/s")
	s.add("api_writes_ps", "CCM API writes per second", d.writes/idle, "req/s")
	s.add("apiserver_lists", "LIST requests the API server served", d.listCount(), "count").
		atMost(maxIdleLists, fmt.Sprintf("≤ %d (no re-list storm)", maxIdleLists), scaled)
	if len(d.apiLists) > 0 {
		s.notef("LIST requests while idle, by resource: %v", d.apiLists)
	}
	s.add("apiserver_cpu_pct", "kube-apiserver + etcd CPU, % of one core", 100*(d.apiCPU+d.etcdCPU).Seconds()/idle, "%")
	if e.ours() {
		sw := e.speakerFrom(before.logOffset)
		if err := sw.read(nil); err != nil {
			return err
		}
		s.add("speaker_changes", "speaker path changes", float64(sw.changes), "count")
		s.add("announcer_errors", "announcer failures logged (\"Cannot announce\")", float64(sw.errors), "count")
	}
	if e.o.Peers > 1 {
		s.notef("%d BGP peers: %s", e.o.Peers, e.peersNote())
	}
	if !e.o.SteadyNotReady {
		s.notef("the %d nodes are Ready, so each address has %d next hops; -steady-not-ready leaves them out of the announcements",
			e.o.SteadyNodes+labNodes, e.o.SteadyNodes+labNodes)
	}
	if e.o.PprofDir != "" {
		if err := e.fetchDebug(ctx, "/debug/pprof/heap", ScenarioSteady+".heap.pb.gz"); err != nil {
			e.log.Error(err, "Heap profile")
		}
		// The runtime's own account of its memory (go_memstats_*).
		if err := e.fetchDebug(ctx, "/metrics", ScenarioSteady+".metrics.txt"); err != nil {
			e.log.Error(err, "Metrics")
		}
	}
	return e.restartReplica(ctx, s, scaled)
}

// idle waits SteadyIdle, sampling the CCM's RSS, and returns the highest.
func (e *env) idle(ctx context.Context) (uint64, error) {
	var peak uint64
	end := time.Now().Add(e.o.SteadyIdle)
	for {
		st, err := framework.ReadProcStat(e.ccm.PID())
		if err != nil {
			return 0, fmt.Errorf("bench: %w", err)
		}
		peak = max(peak, st.RSS)
		left := time.Until(end)
		if left <= 0 {
			return peak, nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("bench: idle: %w", ctx.Err())
		case <-time.After(min(left, rssEvery)):
		}
	}
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
