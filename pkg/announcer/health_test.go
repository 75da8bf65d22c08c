package announcer

import (
	"context"
	"net/netip"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/metal-ccm/metal-ccm/pkg/healthcheck"
)

// fakeChecker has the states the test sets; a change notifies the
// announcer as the real checker does.
type fakeChecker struct {
	mu      sync.Mutex
	states  map[netip.AddrPort]healthcheck.State
	targets map[netip.AddrPort]bool
	notify  func(netip.AddrPort)
}

func (f *fakeChecker) Run(ctx context.Context) { <-ctx.Done() }

func (f *fakeChecker) Set(ts []netip.AddrPort) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.targets = map[netip.AddrPort]bool{}
	for _, t := range ts {
		f.targets[t] = true
	}
}

func (f *fakeChecker) State(t netip.AddrPort) healthcheck.State {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.states[t]
}

func (f *fakeChecker) Counts() map[healthcheck.State]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[healthcheck.State]int{}
	for t := range f.targets {
		out[f.states[t]]++
	}
	return out
}

func (f *fakeChecker) set(t string, s healthcheck.State) {
	f.mu.Lock()
	f.states[netip.MustParseAddrPort(t)] = s
	f.mu.Unlock()
	f.notify(netip.MustParseAddrPort(t))
}

func (f *fakeChecker) checked(t string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.targets[netip.MustParseAddrPort(t)]
}

func TestHealthChecks(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	local := lbService("local", true, "198.18.100.2")
	local.Spec.HealthCheckNodePort = 30001
	cs := fake.NewClientset(
		node("n1", true, "198.18.10.11", "2001:db8:10::11"),
		node("n2", true, "198.18.10.12"),
		node("n3", true, "2001:db8:10::13"),
		lbService("web", false, "198.18.100.1", "2001:db8:100::1"),
		local,
		&discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "ns", Name: "local-1", Labels: map[string]string{discoveryv1.LabelServiceName: "local"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints: []discoveryv1.Endpoint{
				{Addresses: []string{"198.19.0.5"}, NodeName: ptr.To("n1"), Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
				{Addresses: []string{"198.19.1.5"}, NodeName: ptr.To("n2"), Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
			},
		},
	)
	sp := &fakeSpeaker{paths: map[netip.Prefix][]netip.Addr{}}
	f := informers.NewSharedInformerFactory(cs, 0)
	a := New(factoryInformers(f), sp, func(s *v1.Service) bool { return s.Spec.Type == v1.ServiceTypeLoadBalancer },
		Options{HealthChecks: &HealthChecks{ProxyPort: 10256}})
	fc := &fakeChecker{states: map[netip.AddrPort]healthcheck.State{
		netip.MustParseAddrPort("198.18.10.11:10256"):      healthcheck.Healthy,
		netip.MustParseAddrPort("198.18.10.12:10256"):      healthcheck.Healthy,
		netip.MustParseAddrPort("[2001:db8:10::13]:10256"): healthcheck.Healthy,
		netip.MustParseAddrPort("198.18.10.11:30001"):      healthcheck.Healthy,
		netip.MustParseAddrPort("198.18.10.12:30001"):      healthcheck.Healthy,
		netip.MustParseAddrPort("[2001:db8:10::13]:30001"): healthcheck.Unhealthy,
		netip.MustParseAddrPort("198.18.10.14:10256"):      healthcheck.Unknown,
	}, notify: a.healthChanged}
	a.health.checker = fc
	f.Start(ctx.Done())
	go a.Run(ctx)

	eventually(t, "every healthy node announced", func() bool {
		return sp.get("198.18.100.1/32") == "[198.18.10.11 198.18.10.12]" &&
			sp.get("2001:db8:100::1/128") == "[2001:db8:10::11 2001:db8:10::13]" &&
			sp.get("198.18.100.2/32") == "[198.18.10.11 198.18.10.12]"
	})
	// One check per node (IPv4 when it has one), one per node of the Local
	// Service on its healthCheckNodePort.
	for _, want := range []string{"198.18.10.11:10256", "198.18.10.12:10256", "[2001:db8:10::13]:10256", "198.18.10.11:30001", "198.18.10.12:30001"} {
		if !fc.checked(want) {
			t.Errorf("%s is not checked", want)
		}
	}
	if fc.checked("[2001:db8:10::11]:10256") {
		t.Error("a dual-stack node is checked twice")
	}

	t.Run("a node failing kube-proxy's check leaves the Cluster addresses", func(t *testing.T) {
		fc.set("198.18.10.12:10256", healthcheck.Unhealthy)
		eventually(t, "n2 withdrawn from web only", func() bool {
			return sp.get("198.18.100.1/32") == "[198.18.10.11]" && sp.get("198.18.100.2/32") == "[198.18.10.11 198.18.10.12]"
		})
		fc.set("198.18.10.12:10256", healthcheck.Healthy)
		eventually(t, "n2 returned", func() bool { return sp.get("198.18.100.1/32") == "[198.18.10.11 198.18.10.12]" })
	})
	t.Run("a node failing a Local Service's check leaves that address", func(t *testing.T) {
		fc.set("198.18.10.11:30001", healthcheck.Unhealthy)
		eventually(t, "n1 withdrawn from local only", func() bool {
			return sp.get("198.18.100.2/32") == "[198.18.10.12]" && sp.get("198.18.100.1/32") == "[198.18.10.11 198.18.10.12]"
		})
	})
	t.Run("fail open: every node of an address failing keeps them all", func(t *testing.T) {
		fc.set("198.18.10.12:30001", healthcheck.Unhealthy)
		eventually(t, "local keeps both", func() bool { return sp.get("198.18.100.2/32") == "[198.18.10.11 198.18.10.12]" })
		for _, n := range []string{"198.18.10.11:10256", "198.18.10.12:10256", "[2001:db8:10::13]:10256"} {
			fc.set(n, healthcheck.Unhealthy)
		}
		eventually(t, "web keeps every node", func() bool {
			return sp.get("198.18.100.1/32") == "[198.18.10.11 198.18.10.12]" && sp.get("2001:db8:100::1/128") == "[2001:db8:10::11 2001:db8:10::13]"
		})
		eventually(t, "the replica says it reaches no node", a.health.unreachable.Load)
		for _, n := range []string{"198.18.10.11:10256", "198.18.10.12:10256", "[2001:db8:10::13]:10256"} {
			fc.set(n, healthcheck.Healthy)
		}
	})
	t.Run("a new node joins once its check passes", func(t *testing.T) {
		if _, err := cs.CoreV1().Nodes().Create(ctx, node("n4", true, "198.18.10.14"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "n4 checked", func() bool { return fc.checked("198.18.10.14:10256") })
		if got := sp.get("198.18.100.1/32"); got != "[198.18.10.11 198.18.10.12]" {
			t.Errorf("n4 announced before its first check: %s", got)
		}
		fc.set("198.18.10.14:10256", healthcheck.Healthy)
		eventually(t, "n4 joins", func() bool { return sp.get("198.18.100.1/32") == "[198.18.10.11 198.18.10.12 198.18.10.14]" })
	})
}

// TestOnlyNode: a node agent's announcer announces its own node alone, and
// withdraws it when its own check fails (no fail open: the other nodes'
// agents announce theirs).
func TestOnlyNode(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	local := lbService("local", true, "198.18.100.2")
	local.Spec.HealthCheckNodePort = 30001
	n2 := node("n2", true, "198.18.10.12")
	n2.Spec.PodCIDRs = []string{"198.19.2.0/24"}
	cs := fake.NewClientset(
		node("n1", true, "198.18.10.11"), n2,
		lbService("web", false, "198.18.100.1"), local,
		&discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "ns", Name: "local-1", Labels: map[string]string{discoveryv1.LabelServiceName: "local"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints: []discoveryv1.Endpoint{
				{Addresses: []string{"198.19.0.5"}, NodeName: ptr.To("n1"), Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
			},
		},
	)
	sp := &fakeSpeaker{paths: map[netip.Prefix][]netip.Addr{}}
	f := informers.NewSharedInformerFactory(cs, 0)
	a := New(factoryInformers(f), sp, func(s *v1.Service) bool { return s.Spec.Type == v1.ServiceTypeLoadBalancer },
		Options{OnlyNode: "n2", PodRoutes: true, HealthChecks: &HealthChecks{ProxyPort: 10256}})
	fc := &fakeChecker{states: map[netip.AddrPort]healthcheck.State{
		netip.MustParseAddrPort("198.18.10.12:10256"): healthcheck.Healthy,
	}, notify: a.healthChanged}
	a.health.checker = fc
	f.Start(ctx.Done())
	go a.Run(ctx)

	eventually(t, "own node only", func() bool {
		return sp.get("198.18.100.1/32") == "[198.18.10.12]" && sp.get("198.19.2.0/24") == "[198.18.10.12]"
	})
	if got := sp.get("198.18.100.2/32"); got != "[]" {
		t.Errorf("Local Service without an endpoint on the node announced: %s", got)
	}
	if fc.checked("198.18.10.11:10256") {
		t.Error("another node is checked")
	}
	fc.set("198.18.10.12:10256", healthcheck.Unhealthy)
	eventually(t, "withdrawn by its own failing check", func() bool { return sp.get("198.18.100.1/32") == "[]" })
	if got := sp.get("198.19.2.0/24"); got != "[198.18.10.12]" {
		t.Errorf("pod route withdrawn with kube-proxy: %s", got)
	}
}
