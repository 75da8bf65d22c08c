// Command bench runs the benchmark scenarios of docs/performance.md against
// the real local control plane and writes results.json and results.md:
//
//	bench [-profile default|smoke|full] [-only join,lb,...] [size flags]
//	bench -compare a/results.json b/results.json
//
// BENCH_CCM_CMD, when set, is a command line run in place of the built
// metal-cloud-controller-manager, with the same flags appended.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/test/bench"
	"github.com/metal-ccm/metal-ccm/test/framework"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

// stringList is a repeatable flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, " ") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func run() error {
	profile := flag.String("profile", "default", "sizes: default (10 minutes on 2 cores), smoke (about a minute) or full (every goal's size)")
	out := flag.String("out", filepath.Join(framework.RepoRoot(), "_output", "bench"), "where results.json, results.md and the logs go")
	only := flag.String("only", "", "comma-separated scenarios to run: "+strings.Join(bench.AllScenarios, ","))
	router := flag.String("router", bench.RouterAuto, "BIRD router: auto (when root with BIRD), on (or fail) or off")
	compare := flag.Bool("compare", false, "compare two results.json files given as arguments; runs nothing")
	pprof := flag.Bool("pprof", false, "save a CPU profile of the CCM per scenario, and a heap profile after the steady state, in OUT/pprof")
	var apiArgs stringList
	flag.Var(&apiArgs, "apiserver-arg", "an extra kube-apiserver flag, e.g. --max-requests-inflight=800 (repeatable)")
	// Size flags; their defaults are the default profile's, and setting one
	// makes the profile "custom".
	def, err := bench.Profile("default")
	if err != nil {
		return err
	}
	joinNodes := flag.Int("join-nodes", def.JoinNodes, "scenario 1: nodes that join at once (5000 in -profile full)")
	lbServices := flag.Int("lb-services", def.LBServices, "scenarios 2 and 3: LoadBalancer Services")
	localServices := flag.Int("local-services", def.LocalServices, "scenario 4: externalTrafficPolicy Local Services")
	steadyNodes := flag.Int("steady-nodes", def.SteadyNodes, "scenario 5: nodes (5000 in -profile full)")
	steadyServices := flag.Int("steady-services", def.SteadyServices, "scenario 5: LoadBalancer Services in all (10000 in -profile full)")
	steadyL2 := flag.Int("steady-l2-services", 0, "scenario 5: LoadBalancer Services beside those in an L2 pool that no node answers for (at most 1000)")
	steadyIdle := flag.Duration("steady-idle", def.SteadyIdle, "scenario 5: how long to watch the idle CCM")
	peers := flag.Int("peers", 1, "BGP peers of the CCM: sessions with the router lab from that many speaker addresses (at most 8)")
	notReady := flag.Bool("steady-not-ready", false, "scenario 5: register the nodes NotReady, so they are no next hops")
	healthNodes := flag.Int("health-nodes", def.HealthNodes, "scenario 0: nodes whose kube-proxy /healthz the replica checks (at most 8190; 5000 in -profile full)")
	healthIdle := flag.Duration("health-idle", def.HealthIdle, "scenario 0: how long to watch each replica (checks off, then on)")
	healthHTTP := flag.Duration("health-http-interval", 0, "scenario 0: the replica's healthChecks.httpInterval (default: the cloud-config's default)")
	agentNodes := flag.Int("agent-nodes", def.AgentNodes, "scenario 0b: nodes, the node agent's among them (at most 1022)")
	agentServices := flag.Int("agent-services", def.AgentServices, "scenario 0b: LoadBalancer Services, each a path of the node agent")
	agentIdle := flag.Duration("agent-idle", def.AgentIdle, "scenario 0b: how long to watch the idle node agent")
	torChanges := flag.Int("tor-changes", def.TorChanges, "scenario 0c: addresses written into a Service's status and removed, one at a time")
	l2AgentNodes := flag.Int("l2agent-nodes", def.L2AgentNodes, "scenario 0d: Ready nodes, the node agent's the only L2 one among them (at most 255)")
	l2AgentServices := flag.Int("l2agent-services", def.L2AgentServices, "scenario 0d: LoadBalancer Services, each an L2 address the node agent answers for (at most 500)")
	l2AgentIdle := flag.Duration("l2agent-idle", def.L2AgentIdle, "scenario 0d: how long to watch the idle node agent")
	powerNodes := flag.Int("power-nodes", def.PowerNodes, "scenario 0e: nodes with a Redfish BMC, a tenth of them NotReady (5000 in -profile full)")
	powerIdle := flag.Duration("power-idle", def.PowerIdle, "scenario 0e: how long to watch each phase (source none, redfish, BMCs timing out)")
	bfdPeers := flag.Int("bfd-peers", def.BFDPeers, "scenario 0f: BFD-enabled peers of the replica (at most 253)")
	bfdIdle := flag.Duration("bfd-idle", def.BFDIdle, "scenario 0f: how long to watch each process (agent and replica, BFD off and on)")
	torFRR := flag.Bool("tor-frr", false, "scenario 0c: ToR 1 runs FRR (ToR 0 BIRD)")
	timeout := flag.Duration("timeout", def.Timeout, "bound of each wait for the CCM")
	qps := flag.Float64("kube-api-qps", float64(def.ClientQPS), "the CCM's --kube-api-qps, used by the floor's client")
	burst := flag.Int("kube-api-burst", def.ClientBurst, "the CCM's --kube-api-burst, used by the floor's client")
	workers := flag.Int("workers", def.Workers, "writes the floor's client has in flight (the CCM's --concurrent-*-syncs)")
	pprofSeconds := flag.Int("pprof-seconds", def.PprofSeconds, "length of each CPU profile")
	flag.Parse()

	if *compare {
		return compareFiles(flag.Args())
	}
	o, err := bench.Profile(*profile)
	if err != nil {
		return err
	}
	sizes := map[string]func(){
		"join-nodes": func() { o.JoinNodes = *joinNodes }, "lb-services": func() { o.LBServices = *lbServices },
		"local-services": func() { o.LocalServices = *localServices }, "steady-nodes": func() { o.SteadyNodes = *steadyNodes },
		"steady-services":    func() { o.SteadyServices = *steadyServices },
		"steady-l2-services": func() { o.SteadyL2Services = *steadyL2 }, "steady-idle": func() { o.SteadyIdle = *steadyIdle },
		"health-nodes": func() { o.HealthNodes = *healthNodes }, "health-idle": func() { o.HealthIdle = *healthIdle },
		"health-http-interval": func() { o.HealthHTTPInterval = *healthHTTP },
		"agent-nodes":          func() { o.AgentNodes = *agentNodes }, "agent-services": func() { o.AgentServices = *agentServices },
		"agent-idle": func() { o.AgentIdle = *agentIdle }, "tor-changes": func() { o.TorChanges = *torChanges },
		"l2agent-nodes": func() { o.L2AgentNodes = *l2AgentNodes }, "l2agent-services": func() { o.L2AgentServices = *l2AgentServices },
		"l2agent-idle": func() { o.L2AgentIdle = *l2AgentIdle }, "timeout": func() { o.Timeout = *timeout },
		"pprof-seconds": func() { o.PprofSeconds = *pprofSeconds },
		"power-nodes":   func() { o.PowerNodes = *powerNodes }, "power-idle": func() { o.PowerIdle = *powerIdle },
		"bfd-peers": func() { o.BFDPeers = *bfdPeers }, "bfd-idle": func() { o.BFDIdle = *bfdIdle },
	}
	flag.Visit(func(f *flag.Flag) {
		if set, ok := sizes[f.Name]; ok {
			set()
			if f.Name != "timeout" && f.Name != "pprof-seconds" {
				o.Profile = "custom"
			}
		}
	})
	o.SteadyNotReady, o.TorFRR, o.Peers = *notReady, *torFRR, *peers
	o.ClientQPS, o.ClientBurst, o.Workers = float32(*qps), *burst, *workers
	o.Router, o.APIServerArgs = *router, apiArgs
	o.CCMCommand = strings.TrimSpace(os.Getenv("BENCH_CCM_CMD"))
	if *only != "" {
		o.Only = strings.Split(*only, ",")
	}
	o.Dir = filepath.Join(*out, "run")
	if *pprof {
		o.PprofDir = filepath.Join(*out, "pprof")
		if err := os.RemoveAll(o.PprofDir); err != nil {
			return fmt.Errorf("clean %s: %w", o.PprofDir, err)
		}
	}
	if err := os.RemoveAll(o.Dir); err != nil {
		return fmt.Errorf("clean %s: %w", o.Dir, err)
	}
	o.Logger = klog.Background()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := bench.Run(ctx, o)
	if err != nil {
		return err
	}
	md, err := res.Write(*out)
	if err != nil {
		return err
	}
	fmt.Print("\n" + md)
	fmt.Printf("\nWritten: %s and results.md; logs in %s/logs\n", filepath.Join(*out, "results.json"), o.Dir)
	var failed []string
	for _, s := range res.Scenarios {
		if s.Error != "" {
			failed = append(failed, s.ID)
		}
	}
	if len(failed) > 0 {
		return errors.New("scenarios failed: " + strings.Join(failed, ", "))
	}
	return nil
}

func compareFiles(paths []string) error {
	if len(paths) != 2 {
		return errors.New("-compare takes two results.json files")
	}
	a, err := bench.ReadResults(paths[0])
	if err != nil {
		return err
	}
	b, err := bench.ReadResults(paths[1])
	if err != nil {
		return err
	}
	fmt.Print(bench.Compare(a, b))
	return nil
}
