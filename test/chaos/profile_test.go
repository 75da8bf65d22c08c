package chaos

import (
	"errors"
	"fmt"
)

// profile sets how hard each fault is pushed.
type profile struct {
	name string
	// stormServices are created during the leader kills; kills is how many.
	stormServices, kills int
	// apiServices are created around apiRestarts restarts of kube-apiserver.
	apiServices, apiRestarts int
	// routeServices are announced through routerRestarts restarts of the
	// router and flaps BGP session flaps.
	routeServices, routerRestarts, flaps int
	// cutServices exist while a replica is cut off.
	cutServices int
	// powerOffs are node power-offs with the node health checks on;
	// powerOffsNoChecks, with them off (today's behaviour, for comparison:
	// each waits for the node-monitor grace period).
	powerOffs, powerOffsNoChecks int
	// bmcPowerOffs are machines powered off through their BMC (a
	// StatefulSet's pod back elsewhere); bmcUnreachable, BMCs frozen while
	// their node is NotReady; bmcDefaultGrace, power-offs through a BMC
	// under Kubernetes' own node monitoring (each over a minute).
	bmcPowerOffs, bmcUnreachable, bmcDefaultGrace int
	// l2Faults is how many times each L2 fault is injected.
	l2Faults int
	// l2Sizes are the membership's sizes the kills and cuts are measured
	// at again, with agents of nodes without kubelets added to the three
	// real nodes' (L2Cluster.AddAgents): detection must not grow with the
	// size. The largest only in the full profile: 30 agents on a 2-core
	// machine is a load test, not make test's.
	l2Sizes []int
	// agentPowerOffs are node power-offs with node agents and BFD, in
	// turn in each rack; agentRollingRounds, rolling updates of the FRR
	// ToR's rack's agents.
	agentPowerOffs, agentRollingRounds int
	// outsideServices have their status rewritten outsideRewrites times to
	// an address in no pool.
	outsideServices, outsideRewrites int
}

var profiles = map[string]profile{
	"short": {name: "short", stormServices: 60, kills: 3, apiServices: 40, apiRestarts: 1,
		routeServices: 30, routerRestarts: 1, flaps: 1, cutServices: 10, powerOffs: 1, bmcPowerOffs: 1, bmcUnreachable: 1, l2Faults: 1, l2Sizes: []int{10},
		outsideServices: 10, outsideRewrites: 5, agentPowerOffs: 2, agentRollingRounds: 2},
	"full": {name: "full", stormServices: 1000, kills: 20, apiServices: 300, apiRestarts: 2,
		routeServices: 500, routerRestarts: 3, flaps: 5, cutServices: 50, powerOffs: 10, powerOffsNoChecks: 2, bmcPowerOffs: 3, bmcUnreachable: 2, bmcDefaultGrace: 3, l2Faults: 10, l2Sizes: []int{10, 30},
		outsideServices: 100, outsideRewrites: 20, agentPowerOffs: 10, agentRollingRounds: 5},
}

// errProfile refuses an unknown CHAOS_PROFILE.
var errProfile = errors.New("unknown chaos profile")

func selectProfile(name string) (profile, error) {
	if name == "" {
		name = "short"
	}
	p, ok := profiles[name]
	if !ok {
		return profile{}, fmt.Errorf("CHAOS_PROFILE=%q: %w (short or full)", name, errProfile)
	}
	return p, nil
}
