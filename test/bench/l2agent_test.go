package bench

import (
	"net/netip"
	"slices"
	"testing"
)

func TestL2AgentAddresses(t *testing.T) {
	for _, tc := range []struct {
		i    int
		want string
	}{
		{0, "198.18.126.1"}, {1, "2001:db8:126::1"}, {2, "198.18.126.2"},
		{maxL2AgentServices - 2, "198.18.126.250"}, {maxL2AgentServices - 1, "2001:db8:126::250"},
	} {
		if got := l2AgentVIP(tc.i); got != netip.MustParseAddr(tc.want) {
			t.Errorf("l2AgentVIP(%d) = %s, want %s", tc.i, got, tc.want)
		}
	}
	// Every address distinct, in the segment's subnets and the pool's
	// ranges, none the client's or the node's.
	first4, last4 := l2AgentAddr(true, 1), l2AgentAddr(true, l2AgentVIPs)
	first6, last6 := l2AgentAddr(false, 1), l2AgentAddr(false, l2AgentVIPs)
	taken := []netip.Addr{l2AgentAddr(true, l2AgentClientHost), l2AgentAddr(false, l2AgentClientHost),
		l2AgentAddr(true, l2AgentNodeHost), l2AgentAddr(false, l2AgentNodeHost)}
	for _, a := range taken {
		if !l2AgentNet4.Contains(a) && !l2AgentNet6.Contains(a) {
			t.Errorf("%s is off the segment", a)
		}
	}
	seen := map[netip.Addr]bool{}
	for i := range maxL2AgentServices {
		a := l2AgentVIP(i)
		inPool := (a.Compare(first4) >= 0 && a.Compare(last4) <= 0) || (a.Compare(first6) >= 0 && a.Compare(last6) <= 0)
		switch {
		case seen[a]:
			t.Errorf("l2AgentVIP(%d) = %s twice", i, a)
		case !inPool || !l2AgentNet4.Contains(a) && !l2AgentNet6.Contains(a):
			t.Errorf("l2AgentVIP(%d) = %s outside the pool", i, a)
		case slices.Contains(taken, a):
			t.Errorf("l2AgentVIP(%d) = %s is a host's", i, a)
		}
		seen[a] = true
	}
	for _, a := range taken {
		if (a.Compare(first4) >= 0 && a.Compare(last4) <= 0) || (a.Compare(first6) >= 0 && a.Compare(last6) <= 0) {
			t.Errorf("the pool holds the host address %s", a)
		}
	}
}

func TestL2AgentInProfiles(t *testing.T) {
	smoke, err := Profile("smoke")
	if err != nil {
		t.Fatal(err)
	}
	smoke.Dir = t.TempDir()
	if err := smoke.validate(); err != nil {
		t.Fatal(err)
	}
	if !smoke.skips(ScenarioL2Agent) {
		t.Error("the smoke profile runs the L2 agent scenario")
	}
	smoke.Only = []string{ScenarioL2Agent}
	if smoke.skips(ScenarioL2Agent) {
		t.Error("-only l2agent -profile smoke skips it")
	}
	def, err := Profile("default")
	if err != nil {
		t.Fatal(err)
	}
	def.Dir = t.TempDir()
	if err := def.validate(); err != nil {
		t.Fatal(err)
	}
	if def.skips(ScenarioL2Agent) || def.L2AgentServices != goalL2AgentServices {
		t.Errorf("default profile: skips %v, %d Services; want it run at %d", def.skips(ScenarioL2Agent), def.L2AgentServices, goalL2AgentServices)
	}
}
