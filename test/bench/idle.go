package bench

import (
	"context"
	"time"
)

// Scenarios 0, 0b and 0d each measure one process while the cluster is
// idle: a replica with and without health checks, a node agent, a node
// agent with L2. They share one skeleton (runIdle) and differ in the parts
// of an idleScenario.

// idleLab is a scenario's network namespaces, which the measured process
// runs in; close deletes them.
type idleLab interface{ close() }

// idleScenario is what one idle scenario brings to runIdle.
type idleScenario[L idleLab] struct {
	// name names the scenario in log lines ("health", "agent").
	name string
	// unavailable says why the scenario cannot run here, or "".
	unavailable func() string
	// nodes and services are the nodes and Service keys setup creates:
	// only this scenario has them, and runIdle deletes them after, also on
	// failure, so that the scenarios that follow see none of them (and the
	// pool gets its addresses back).
	nodes, services []string
	// start makes the namespaces; on error it leaves nothing.
	start func() (L, error)
	// timeStart counts start in the setup time.
	timeStart bool
	// setup creates the nodes and Services and waits until they are
	// ready; setupTitle is the title of its time.
	setup      func(context.Context) error
	setupTitle string
	// settle waits before measuring until the leader's writes of the
	// Services' conditions have drained: Service updates every agent
	// receives, not the idle agent's own work.
	settle bool
	// measure runs the process in lab and adds its figures to s.
	measure func(ctx context.Context, s *Scenario, lab L) error
}

// runIdle is the skeleton of the idle scenarios: skip if sc cannot run
// here; make its namespaces, its nodes and Services, and time that; let the
// cluster settle; measure; delete what it made.
func runIdle[L idleLab](ctx context.Context, e *env, s *Scenario, sc idleScenario[L]) error {
	if why := sc.unavailable(); why != "" {
		s.Skipped = why
		return nil
	}
	began := time.Now()
	lab, err := sc.start()
	if err != nil {
		return err
	}
	defer lab.close()
	if !sc.timeStart {
		began = time.Now()
	}
	defer e.deleteScenarioObjects(ctx, sc.name, sc.services, sc.nodes)
	if err := sc.setup(ctx); err != nil {
		return err
	}
	s.add("setup_s", sc.setupTitle, time.Since(began).Seconds(), "s")
	if sc.settle {
		if _, err := e.settleWithin(ctx, statusDrainMax); err != nil {
			return err
		}
	}
	return sc.measure(ctx, s, lab)
}

// deleteScenarioObjects deletes a scenario's Services, then its nodes, with
// a context of its own (ctx may have ended), and logs what fails.
func (e *env) deleteScenarioObjects(ctx context.Context, name string, services, nodes []string) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.o.Timeout)
	defer cancel()
	if len(services) > 0 {
		if err := e.deleteServices(dctx, services); err != nil {
			e.log.Error(err, "Deleting the "+name+" scenario's Services")
		}
	}
	if err := e.deleteNodes(dctx, nodes); err != nil {
		e.log.Error(err, "Deleting the "+name+" scenario's nodes")
	}
}

// agentExecutableFigure adds the size of the measured agent's executable,
// as it ran (hack/build.sh's build; the image's is smaller:
// docs/performance.md, scenario 0b).
func agentExecutableFigure(s *Scenario, r agentRun) *Figure {
	return s.add("exe_mb", "agent executable, as it ran (hack/build.sh)", float64(r.exe)/1e6, "MB")
}

// agentMemoryFigures adds what the node agent scenarios report of the
// measured agent's memory beyond its RSS at the end.
func agentMemoryFigures(s *Scenario, r agentRun) {
	s.add("rss_max_mib", "agent RSS, highest sampled while idle", mib(r.rssPeak), "MiB")
	s.add("rss_hwm_mib", "agent RSS, highest since start (VmHWM)", mib(r.hwm), "MiB")
	s.add("rss_anon_mib", "of which anonymous (heap, stacks, runtime)", mib(r.anon), "MiB")
	s.add("rss_file_mib", "of which file-backed (the executable's pages)", mib(r.file), "MiB")
	if r.heapMB >= 0 {
		s.add("heap_live_mib", "live heap after the last collection (gctrace)", r.heapMB, "MiB")
		s.add("heap_goal_mib", "heap goal of the next collection (gctrace)", r.heapGoalMB, "MiB")
	}
}
