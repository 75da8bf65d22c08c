package config

import (
	"slices"
	"testing"
)

// restartDoc is a config with the given pools' lines and extra sections.
func restartDoc(pools, extra string) string {
	return `
apiVersion: metal-ccm.io/v1alpha1
kind: CloudConfig
loadBalancer:
  pools:
  - {name: a, addresses: [198.18.100.0/28]}
` + pools + `bgp:
  asn: 64512
  peers: [{address: 198.18.10.1, asn: 64500}]
` + extra
}

func TestChangedAtRestart(t *testing.T) {
	const poolB = "  - {name: b, addresses: [198.18.101.0/28]}\n"
	for _, tc := range []struct {
		name     string
		old, new string
		want     []string
	}{
		{"nothing", restartDoc("", ""), restartDoc("", ""), nil},
		{"onStop applies at once", restartDoc("", ""), restartDoc("", "  onStop: Withdraw\n"), nil},
		{"the l2 section", restartDoc("", ""), restartDoc("", "l2:\n  interfaces: [eth1]\n"), []string{"l2"}},
		{"a pool's protocols", restartDoc(poolB, "l2:\n  secretFile: /k\n"), restartDoc("  - {name: b, addresses: [198.18.101.0/28], announce: [L2]}\n", "l2:\n  secretFile: /k\n"),
			[]string{"loadBalancer.pools[].announce"}},
		{"a new pool", restartDoc("", ""), restartDoc(poolB, ""), []string{"loadBalancer.pools[].addresses", "loadBalancer.pools[].announce"}},
		{"serviceStatus applies at once", restartDoc("", ""), restartDoc("", "serviceStatus:\n  writesPerSecond: 5\n"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, updated := parsePair(t, tc.old, tc.new)
			var got []string
			for _, f := range ChangedAtRestart(old, updated) {
				got = append(got, f.Path)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("ChangedAtRestart = %v; want %v", got, tc.want)
			}
		})
	}
}

// TestRestartsOf: a change restarts only the processes that read it at
// start; a new pool is the agents' alone (the replicas apply it at once).
func TestRestartsOf(t *testing.T) {
	const poolB = "  - {name: b, addresses: [198.18.101.0/28]}\n"
	for _, tc := range []struct {
		name             string
		old, new         string
		replicas, agents []string
	}{
		{"a new pool", restartDoc("", ""), restartDoc(poolB, ""), nil, []string{"loadBalancer.pools[].addresses", "loadBalancer.pools[].announce"}},
		{"the l2 section", restartDoc("", ""), restartDoc("", "l2:\n  interfaces: [eth1]\n"), []string{"l2"}, []string{"l2"}},
		// Only the agents read it: the replicas' observer follows what the
		// agents gossip.
		{"l2 failback", restartDoc("", ""), restartDoc("", "l2:\n  failback: Sticky\n"), nil, []string{"l2.failback"}},
		{"health checks", restartDoc("", ""), restartDoc("", "healthChecks:\n  enabled: false\n"), []string{"healthChecks"}, nil},
		{"the inventory", restartDoc("", ""), restartDoc("", "nodes:\n  inventory: [{name: n1}]\n"), nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, updated := parsePair(t, tc.old, tc.new)
			changed := ChangedAtRestart(old, updated)
			if got := RestartsOf(changed, Replicas); !slices.Equal(got, tc.replicas) {
				t.Errorf("replicas restart for %v; want %v", got, tc.replicas)
			}
			if got := RestartsOf(changed, Agents); !slices.Equal(got, tc.agents) {
				t.Errorf("agents restart for %v; want %v", got, tc.agents)
			}
		})
	}
}

// parsePair parses two config documents.
func parsePair(t *testing.T, a, b string) (*CloudConfig, *CloudConfig) {
	t.Helper()
	old, err := Parse([]byte(a))
	if err != nil {
		t.Fatal(err)
	}
	updated, err := Parse([]byte(b))
	if err != nil {
		t.Fatal(err)
	}
	return old, updated
}

// TestAgentsApplyLive: BGP pools added, removed or changed reach the node
// agents at once; a change that touches an L2 pool, or another field the
// agents read at start, restarts them; no change is nothing to apply.
func TestAgentsApplyLive(t *testing.T) {
	const (
		poolB   = "  - {name: b, addresses: [198.18.101.0/28]}\n"
		poolB2  = "  - {name: b, addresses: [198.18.102.0/28]}\n"
		l2B     = "  - {name: b, addresses: [198.18.101.0/28], announce: [L2]}\n"
		l2C     = "  - {name: c, addresses: [198.18.103.0/28], announce: [L2]}\n"
		l2Extra = "l2:\n  secretFile: /k\n"
	)
	for _, tc := range []struct {
		name     string
		old, new string
		want     bool
	}{
		{"nothing", restartDoc("", ""), restartDoc("", ""), false},
		{"a BGP pool added", restartDoc("", ""), restartDoc(poolB, ""), true},
		{"a BGP pool removed", restartDoc(poolB, ""), restartDoc("", ""), true},
		{"a BGP pool's addresses", restartDoc(poolB, ""), restartDoc(poolB2, ""), true},
		{"a BGP pool beside an L2 pool", restartDoc(l2C, l2Extra), restartDoc(l2C+poolB, l2Extra), true},
		{"an L2 pool added", restartDoc("", l2Extra), restartDoc(l2C, l2Extra), false},
		{"a pool from BGP to L2", restartDoc(poolB, l2Extra), restartDoc(l2B, l2Extra), false},
		{"a BGP pool and the bgp section", restartDoc("", ""), restartDoc(poolB, "  maxPathsPerAddress: 8\n"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, updated := parsePair(t, tc.old, tc.new)
			if got := AgentsApplyLive(old, updated); got != tc.want {
				t.Errorf("AgentsApplyLive = %v, want %v (changed: %v)", got, tc.want, RestartsOf(ChangedAtRestart(old, updated), Agents))
			}
		})
	}
}
