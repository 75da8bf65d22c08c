// Package bench is the benchmark harness of `make bench`: it starts the real
// control plane (test/framework), one CCM replica (ours, or the command in
// BENCH_CCM_CMD) and, as root, a BIRD router in network namespaces
// (test/netlab), then runs the scenarios of docs/performance.md and reports
// each figure with a floor: the time the same number of minimal API writes
// takes a trivial client with the CCM's client limits, on the same API server
// in the same run.
package bench

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sys/unix"
)

// Scenario IDs, in the order they run.
const (
	ScenarioHealth    = "health"
	ScenarioAgent     = "agent"
	ScenarioTor       = "tor"
	ScenarioL2Agent   = "l2agent"
	ScenarioPower     = "power"
	ScenarioBFD       = "bfd"
	ScenarioJoin      = "join"
	ScenarioLB        = "lb"
	ScenarioChurn     = "churn"
	ScenarioEndpoints = "endpoints"
	ScenarioSteady    = "steady"
)

// AllScenarios lists every scenario in run order.
var AllScenarios = []string{ScenarioHealth, ScenarioAgent, ScenarioTor, ScenarioL2Agent, ScenarioPower, ScenarioBFD, ScenarioJoin, ScenarioLB, ScenarioChurn, ScenarioEndpoints, ScenarioSteady}

// Sizes the goals are stated for; a smaller run marks its goals "scaled".
const (
	goalJoinNodes      = 1000
	goalLBServices     = 1000
	goalSteadyNodes    = 5000
	goalSteadyServices = 10000
)

// Router modes.
const (
	RouterAuto = "auto" // a BIRD router when netlab can run here
	RouterOn   = "on"   // a BIRD router, or fail
	RouterOff  = "off"  // no router
)

// Options are the sizes and switches of one run.
type Options struct {
	// Profile names the sizes ("default", "smoke", "full"); "custom" once a
	// size flag changes them.
	Profile string
	// Dir holds the control plane's data and logs. Required.
	Dir string
	// Logger reports progress.
	Logger logr.Logger
	// CCMCommand, when set, is a shell command line run in place of the
	// built metal-cloud-controller-manager, with the same flags appended.
	CCMCommand string
	// Router is RouterAuto, RouterOn or RouterOff.
	Router string
	// Only lists the scenarios to run; empty runs all.
	Only []string
	// Skip lists the scenarios the profile leaves out (reported as
	// skipped) unless Only names them.
	Skip []string

	// JoinNodes is the size of the node-join storm.
	JoinNodes int
	// LBServices is the size of the LoadBalancer storm, and the load of the
	// node churn.
	LBServices int
	// LocalServices is the number of externalTrafficPolicy Local Services
	// whose endpoints move.
	LocalServices int
	// SteadyNodes and SteadyServices are the size of the steady state.
	SteadyNodes, SteadyServices int
	// SteadyL2Services are LoadBalancer Services beside SteadyServices
	// in an L2 pool of their own (steadyL2Pool) that no node answers
	// for (l2.nodeSelector selects none): what an L2 pool adds to the
	// replicas.
	SteadyL2Services int
	// SteadyIdle is how long the steady state is watched.
	SteadyIdle time.Duration
	// SteadyNotReady registers the steady state's nodes NotReady, so that
	// they are not next hops of any announcement.
	SteadyNotReady bool
	// Peers is the number of BGP peers the CCM has (default 1): with the
	// router lab, sessions with the router's two addresses, the others
	// closed ports (cloudConfig): the memory and work of each peer.
	Peers int
	// HealthNodes is the size of the node health checks scenario, and
	// HealthIdle how long each of its two replicas is watched.
	HealthNodes int
	HealthIdle  time.Duration
	// HealthHTTPInterval is the replica's healthChecks.httpInterval; 0:
	// its default.
	HealthHTTPInterval time.Duration
	// AgentNodes and AgentServices are the size of the node agent
	// scenario, and AgentIdle how long its agent is watched.
	AgentNodes, AgentServices int
	AgentIdle                 time.Duration
	// TorChanges is how many addresses the ToR scenario writes and
	// removes; TorFRR makes its ToR 1 FRR (ToR 0 stays BIRD).
	TorChanges int
	TorFRR     bool
	// L2AgentNodes and L2AgentServices are the size of the L2 node agent
	// scenario, and L2AgentIdle how long its agent is watched.
	L2AgentNodes, L2AgentServices int
	L2AgentIdle                   time.Duration
	// PowerNodes is the size of the power-state scenario (a tenth of them
	// NotReady), and PowerIdle how long each of its three phases is
	// watched.
	PowerNodes int
	PowerIdle  time.Duration
	// BFDPeers is how many BFD-enabled peers the BFD scenario's replica
	// has, and BFDIdle how long each of its four processes is watched.
	BFDPeers int
	BFDIdle  time.Duration

	// Timeout bounds each wait for the CCM.
	Timeout time.Duration
	// ClientQPS and ClientBurst are the CCM's client limits, which the
	// floor's client uses too (the CCM's defaults: 100 and 200).
	ClientQPS   float32
	ClientBurst int
	// Workers is how many writes the floor's client has in flight (the
	// CCM's default --concurrent-node-syncs and --concurrent-service-syncs).
	Workers int
	// APIServerArgs are extra kube-apiserver flags.
	APIServerArgs []string
	// PprofDir, when set, receives a CPU profile of the CCM per scenario
	// (PprofSeconds long, from the scenario's start; the steady state's
	// from the start of the idle time) and a heap profile at the end of the
	// steady state.
	PprofDir     string
	PprofSeconds int
}

// Profile returns the options of a named profile: "default" fits in ten
// minutes on two cores, "smoke" in about a minute, "full" is every size the
// goals are stated for.
func Profile(name string) (Options, error) {
	o := Options{
		Profile: name, Router: RouterAuto, Logger: logr.Discard(),
		JoinNodes: 1000, LBServices: 1000, LocalServices: 200,
		SteadyNodes: 1000, SteadyServices: 2000, SteadyIdle: 2 * time.Minute,
		HealthNodes: 1000, HealthIdle: time.Minute,
		AgentNodes: goalAgentNodes, AgentServices: goalAgentServices, AgentIdle: time.Minute, TorChanges: goalTorChanges,
		L2AgentNodes: defaultL2AgentNodes, L2AgentServices: goalL2AgentServices, L2AgentIdle: time.Minute,
		PowerNodes: 1000, PowerIdle: 30 * time.Second,
		BFDPeers: goalBFDPeers, BFDIdle: time.Minute,
		Timeout: 5 * time.Minute, ClientQPS: 100, ClientBurst: 200, Workers: 10,
		PprofSeconds: 20,
	}
	switch name {
	case "default":
	case "full":
		o.JoinNodes, o.SteadyNodes, o.SteadyServices = 5000, 5000, 10000
		o.PowerNodes, o.PowerIdle = goalPowerNodes, time.Minute
		o.HealthNodes = goalHealthNodes
		o.Timeout = 15 * time.Minute
	case "smoke":
		o.JoinNodes, o.LBServices, o.LocalServices = 30, 30, 10
		o.SteadyNodes, o.SteadyServices, o.SteadyIdle = 40, 60, 5*time.Second
		// HTTP checks every other second: both kinds of check within the
		// short idle window.
		o.HealthNodes, o.HealthIdle, o.HealthHTTPInterval = 20, 3*time.Second, 2*time.Second
		o.AgentNodes, o.AgentServices, o.AgentIdle = 20, 40, 3*time.Second
		o.TorChanges = 2
		o.PowerNodes, o.PowerIdle = 100, 2*time.Second
		// Not in `make test`: the agent's figure needs its full size.
		// Nor the BFD scenario: four processes, each waited for until its
		// sessions are up, cost more than the smoke's budget.
		o.Skip = []string{ScenarioL2Agent, ScenarioBFD}
		o.BFDPeers, o.BFDIdle = 3, 3*time.Second
		o.L2AgentNodes, o.L2AgentServices, o.L2AgentIdle = 3, 40, 3*time.Second
		o.Timeout = 2 * time.Minute
		o.PprofSeconds = 5
	default:
		return o, fmt.Errorf("unknown profile %q: want default, smoke or full", name)
	}
	return o, nil
}

// maxPeers is the most BGP peers the bench gives the CCM: the router lab's
// speaker addresses.
const maxPeers = 8

func (o *Options) validate() error {
	var errs []error
	if o.Dir == "" {
		errs = append(errs, errors.New("the scratch directory (Dir) is required"))
	}
	for _, id := range slices.Concat(o.Only, o.Skip) {
		if !slices.Contains(AllScenarios, id) {
			errs = append(errs, fmt.Errorf("unknown scenario %q (want %s)", id, strings.Join(AllScenarios, ", ")))
		}
	}
	if !slices.Contains([]string{RouterAuto, RouterOn, RouterOff}, o.Router) {
		errs = append(errs, fmt.Errorf("router %q: want auto, on or off", o.Router))
	}
	for _, n := range []struct {
		name   string
		v, max int
	}{
		{"join nodes", o.JoinNodes, maxJoinNodes}, {"LoadBalancer Services", o.LBServices, maxServices},
		{"Local Services", o.LocalServices, maxServices}, {"steady nodes", o.SteadyNodes, maxSteadyNodes},
		{"steady Services", o.SteadyServices, maxServices}, {"health nodes", o.HealthNodes, maxHealthNodes},
		{"agent nodes", o.AgentNodes, maxAgentNodes}, {"agent Services", o.AgentServices, maxServices},
		{"ToR changes", o.TorChanges, maxTorChanges},
		{"L2 agent nodes", o.L2AgentNodes, maxL2AgentNodes}, {"L2 agent Services", o.L2AgentServices, maxL2AgentServices},
		{"power nodes", o.PowerNodes, maxPowerNodes}, {"BFD peers", o.BFDPeers, maxBFDPeers},
	} {
		if n.v < 1 || n.v > n.max {
			errs = append(errs, fmt.Errorf("%s: %d out of range 1..%d", n.name, n.v, n.max))
		}
	}
	if o.SteadyL2Services < 0 || o.SteadyL2Services > maxSteadyL2Services {
		errs = append(errs, fmt.Errorf("steady L2 Services: %d out of range 0..%d", o.SteadyL2Services, maxSteadyL2Services))
	}
	if o.Peers == 0 {
		o.Peers = 1
	}
	if o.Peers < 1 || o.Peers > maxPeers {
		errs = append(errs, fmt.Errorf("peers: %d out of range 1..%d", o.Peers, maxPeers))
	}
	if o.LBServices+o.LocalServices > o.SteadyServices {
		o.SteadyServices = o.LBServices + o.LocalServices
	}
	if o.ClientQPS <= 0 || o.ClientBurst < 1 || o.Workers < 1 || o.Timeout <= 0 || o.SteadyIdle <= 0 || o.HealthIdle <= 0 || o.AgentIdle <= 0 || o.L2AgentIdle <= 0 || o.PowerIdle <= 0 || o.BFDIdle <= 0 {
		errs = append(errs, errors.New("client QPS, burst, workers, timeout and idle times must be positive"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("bench options: %w", err)
	}
	return nil
}

func (o *Options) runs(id string) bool { return len(o.Only) == 0 || slices.Contains(o.Only, id) }

// skips says whether the profile leaves scenario id out: it is in Skip and
// Only does not name it.
func (o *Options) skips(id string) bool {
	return slices.Contains(o.Skip, id) && !slices.Contains(o.Only, id)
}

// Run runs the scenarios and returns what they measured. A scenario that
// fails is recorded with its error and the next one runs; Run's error is for
// what stops the whole run (the control plane or the CCM not starting).
func Run(ctx context.Context, o Options) (*Results, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	res := &Results{Started: time.Now(), Profile: o.Profile, Machine: machine()}
	e, err := start(ctx, o)
	if err != nil {
		return nil, err
	}
	defer e.stop()
	res.CCM, res.Router = e.ccmName, e.routerText()
	steps := []struct {
		id, title string
		size      map[string]int
		run       func(context.Context, *Scenario) error
	}{
		{ScenarioHealth, "0. Node health checks", map[string]int{"nodes": o.HealthNodes,
			"idleSeconds": int(o.HealthIdle.Seconds())}, e.healthNodes},
		{ScenarioAgent, "0b. Node agent", map[string]int{"nodes": o.AgentNodes, "services": o.AgentServices,
			"idleSeconds": int(o.AgentIdle.Seconds())}, e.nodeAgent},
		{ScenarioTor, "0c. Address to every ToR", map[string]int{"nodes": 4, "changes": o.TorChanges}, e.torRoutes},
		{ScenarioL2Agent, "0d. Node agent with L2", map[string]int{"nodes": o.L2AgentNodes, "services": o.L2AgentServices,
			"idleSeconds": int(o.L2AgentIdle.Seconds())}, e.l2Agent},
		{ScenarioPower, "0e. Power-state source", map[string]int{"nodes": o.PowerNodes, "notReady": max(1, o.PowerNodes/10),
			"idleSeconds": int(o.PowerIdle.Seconds())}, e.powerSource},
		{ScenarioBFD, "0f. BFD", map[string]int{"agentSessions": bfdAgentSessions, "replicaPeers": o.BFDPeers,
			"idleSeconds": int(o.BFDIdle.Seconds())}, e.bfdCost},
		{ScenarioJoin, "1. Node-join storm", map[string]int{"nodes": o.JoinNodes}, e.joinStorm},
		{ScenarioLB, "2. LoadBalancer storm", map[string]int{"services": o.LBServices, "labNodes": labNodes}, e.lbStorm},
		{ScenarioChurn, "3. Node churn under load", map[string]int{"services": o.LBServices, "labNodes": labNodes}, e.nodeChurn},
		{ScenarioEndpoints, "4. Endpoint churn", map[string]int{"services": o.LocalServices}, e.endpointChurn},
		{ScenarioSteady, "5. Steady state", steadySize(o), e.steadyState},
	}
	for _, st := range steps {
		if !o.runs(st.id) {
			continue
		}
		s := &Scenario{ID: st.id, Title: st.title, Size: st.size}
		res.Scenarios = append(res.Scenarios, s)
		if err := ctx.Err(); err != nil {
			s.Error = err.Error()
			continue
		}
		if o.skips(st.id) {
			s.Skipped = "left out of this profile (-only " + st.id + " runs it)"
			continue
		}
		e.log.Info("Scenario", "title", st.title, "size", st.size)
		stopProfile := func() {}
		if !slices.Contains([]string{ScenarioSteady, ScenarioHealth, ScenarioAgent, ScenarioTor, ScenarioL2Agent, ScenarioPower, ScenarioBFD}, st.id) { // profiled while idle, or not the CCM's figures
			stopProfile = e.profileCPU(ctx, st.id, o.PprofSeconds)
		}
		if err := st.run(ctx, s); err != nil {
			s.Error = err.Error()
			e.log.Error(err, "Scenario failed", "title", st.title)
		}
		stopProfile()
	}
	res.DurationSeconds = time.Since(res.Started).Seconds()
	return res, nil
}

func machine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version()}
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) == nil {
		m.MemoryGiB = float64(si.Totalram*uint64(si.Unit)) / (1 << 30)
	}
	var un unix.Utsname
	if unix.Uname(&un) == nil {
		m.Kernel = "Linux " + unix.ByteSliceToString(un.Release[:])
	}
	return m
}

// steadySize is scenario 5's size, with its L2 Services when there are some.
func steadySize(o Options) map[string]int {
	m := map[string]int{"nodes": o.SteadyNodes, "services": o.SteadyServices, "idleSeconds": int(o.SteadyIdle.Seconds())}
	if o.SteadyL2Services > 0 {
		m["l2Services"] = o.SteadyL2Services
	}
	return m
}
