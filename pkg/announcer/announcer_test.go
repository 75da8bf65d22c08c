package announcer

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/metal-ccm/metal-ccm/pkg/nodes"
	"github.com/metal-ccm/metal-ccm/pkg/rendezvous"
)

// factoryInformers are a factory's informers of what the announcer watches,
// as the CCM builds them.
func factoryInformers(f informers.SharedInformerFactory) Informers {
	return Informers{
		Services:       f.Core().V1().Services().Informer(),
		Nodes:          f.Core().V1().Nodes().Informer(),
		EndpointSlices: f.Discovery().V1().EndpointSlices().Informer(),
	}
}

type fakeSpeaker struct {
	mu    sync.Mutex
	paths map[netip.Prefix][]netip.Addr
	calls int
}

func (f *fakeSpeaker) SetPaths(_ context.Context, p netip.Prefix, hops []netip.Addr) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if len(hops) == 0 {
		delete(f.paths, p)
	} else {
		f.paths[p] = slices.Clone(hops)
	}
	return nil
}

func (f *fakeSpeaker) get(p string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fmt.Sprint(f.paths[netip.MustParsePrefix(p)])
}

func node(name string, ready bool, ips ...string) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
	st := v1.ConditionFalse
	if ready {
		st = v1.ConditionTrue
	}
	n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: st}}
	for _, ip := range ips {
		n.Status.Addresses = append(n.Status.Addresses, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip})
	}
	return n
}

func lbService(name string, local bool, ips ...string) *v1.Service {
	s := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer}}
	if local {
		s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
	}
	for _, ip := range ips {
		s.Status.LoadBalancer.Ingress = append(s.Status.LoadBalancer.Ingress, v1.LoadBalancerIngress{IP: ip})
	}
	return s
}

func eventually(t *testing.T, what string, f func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 5*time.Second, true,
		func(context.Context) (bool, error) { return f(), nil }); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func TestAnnouncements(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cs := fake.NewClientset(
		node("n1", true, "198.18.10.11", "2001:db8:10::11"),
		node("n2", true, "198.18.10.12", "2001:db8:10::12"),
		node("n3", false, "198.18.10.13"),
		lbService("web", false, "198.18.100.1", "2001:db8:100::1"),
		lbService("local", true, "198.18.100.2"),
	)
	sp := &fakeSpeaker{paths: map[netip.Prefix][]netip.Addr{}}
	f := informers.NewSharedInformerFactory(cs, 0)
	a := New(factoryInformers(f), sp, func(s *v1.Service) bool {
		return s.Spec.Type == v1.ServiceTypeLoadBalancer && s.Spec.LoadBalancerClass == nil
	}, Options{})
	f.Start(ctx.Done())
	go a.Run(ctx)

	eventually(t, "ECMP next hops of Ready nodes", func() bool {
		return sp.get("198.18.100.1/32") == "[198.18.10.11 198.18.10.12]" && sp.get("2001:db8:100::1/128") == "[2001:db8:10::11 2001:db8:10::12]"
	})
	if got := sp.get("198.18.100.2/32"); got != "[]" {
		t.Errorf("Local Service without endpoints announced: %s", got)
	}
	// Endpoints on n2 and on the NotReady n3: only n2.
	_, err := cs.DiscoveryV1().EndpointSlices("ns").Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "local-1", Labels: map[string]string{discoveryv1.LabelServiceName: "local"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"198.19.1.5"}, NodeName: ptr.To("n2"), Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
			{Addresses: []string{"198.19.3.5"}, NodeName: ptr.To("n3")},
			{Addresses: []string{"198.19.0.5"}, NodeName: ptr.To("n1"), Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "Local follows ready endpoints", func() bool { return sp.get("198.18.100.2/32") == "[198.18.10.12]" })

	// n3 becomes Ready: joins Cluster Services and, with its endpoint, the Local one.
	n3 := node("n3", true, "198.18.10.13")
	if _, err := cs.CoreV1().Nodes().Update(ctx, n3, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "node joins", func() bool {
		return sp.get("198.18.100.1/32") == "[198.18.10.11 198.18.10.12 198.18.10.13]" && sp.get("198.18.100.2/32") == "[198.18.10.12 198.18.10.13]"
	})
	// Excluding n1 removes it everywhere.
	n1 := node("n1", true, "198.18.10.11", "2001:db8:10::11")
	n1.Labels[ExcludeLabel] = ""
	if _, err := cs.CoreV1().Nodes().Update(ctx, n1, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "excluded node leaves", func() bool {
		return sp.get("198.18.100.1/32") == "[198.18.10.12 198.18.10.13]" && sp.get("2001:db8:100::1/128") == "[2001:db8:10::12]"
	})
	// Another class is not announced; deleting a Service withdraws it.
	other := lbService("other", false, "198.18.100.9")
	other.Spec.LoadBalancerClass = ptr.To("example.com/x")
	if _, err := cs.CoreV1().Services("ns").Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Services("ns").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "withdrawn", func() bool { return sp.get("198.18.100.1/32") == "[]" && sp.get("2001:db8:100::1/128") == "[]" })
	if got := sp.get("198.18.100.9/32"); got != "[]" {
		t.Errorf("another class was announced: %s", got)
	}
}

func TestSharedAddressIsTheUnionOfItsServices(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a1, a2 := lbService("a", true, "198.18.100.3"), lbService("b", true, "198.18.100.3")
	cs := fake.NewClientset(node("n1", true, "198.18.10.11"), node("n2", true, "198.18.10.12"), a1, a2,
		&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a-1", Labels: map[string]string{discoveryv1.LabelServiceName: "a"}},
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"198.19.0.1"}, NodeName: ptr.To("n1")}}},
		&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b-1", Labels: map[string]string{discoveryv1.LabelServiceName: "b"}},
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"198.19.1.1"}, NodeName: ptr.To("n2")}}},
	)
	sp := &fakeSpeaker{paths: map[netip.Prefix][]netip.Addr{}}
	f := informers.NewSharedInformerFactory(cs, 0)
	an := New(factoryInformers(f), sp, func(*v1.Service) bool { return true }, Options{})
	f.Start(ctx.Done())
	go an.Run(ctx)
	eventually(t, "union", func() bool { return sp.get("198.18.100.3/32") == "[198.18.10.11 198.18.10.12]" })
	if err := cs.CoreV1().Services("ns").Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "one left", func() bool { return sp.get("198.18.100.3/32") == "[198.18.10.12]" })
}

func TestPodRoutes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n1 := node("n1", true, "198.18.10.11", "2001:db8:10::11")
	n1.Spec.PodCIDRs = []string{"198.19.1.0/24", "2001:db8:101::/64"}
	n2 := node("n2", false, "198.18.10.12")
	n2.Spec.PodCIDRs = []string{"198.19.2.0/24", "2001:db8:102::/64"} // no IPv6 address: no IPv6 route
	cs := fake.NewClientset(n1, n2)
	sp := &fakeSpeaker{paths: map[netip.Prefix][]netip.Addr{}}
	f := informers.NewSharedInformerFactory(cs, 0)
	an := New(factoryInformers(f), sp, func(*v1.Service) bool { return true }, Options{PodRoutes: true})
	f.Start(ctx.Done())
	go an.Run(ctx)
	eventually(t, "pod routes", func() bool {
		return sp.get("198.19.1.0/24") == "[198.18.10.11]" && sp.get("2001:db8:101::/64") == "[2001:db8:10::11]" &&
			sp.get("198.19.2.0/24") == "[198.18.10.12]"
	})
	if got := sp.get("2001:db8:102::/64"); got != "[]" {
		t.Errorf("route without a next hop: %s", got)
	}
	eventually(t, "NodeRoutes", func() bool { return len(an.NodeRoutes()) == 3 })
	if err := cs.CoreV1().Nodes().Delete(ctx, "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "withdrawn with the node", func() bool {
		return sp.get("198.19.1.0/24") == "[]" && sp.get("2001:db8:101::/64") == "[]" && len(an.NodeRoutes()) == 1
	})
}

func TestMaxNextHopsOption(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cs := fake.NewClientset(
		node("n1", true, "198.18.10.11"),
		node("n2", true, "198.18.10.12"),
		node("n3", true, "198.18.10.13"),
		node("n4", true, "198.18.10.14"),
		lbService("web", false, "198.18.100.1"),
		lbService("api", false, "198.18.100.2"),
	)
	sp := &fakeSpeaker{paths: map[netip.Prefix][]netip.Addr{}}
	f := informers.NewSharedInformerFactory(cs, 0)
	a := New(factoryInformers(f), sp, func(s *v1.Service) bool { return s.Spec.Type == v1.ServiceTypeLoadBalancer }, Options{MaxNextHops: 2})
	f.Start(ctx.Done())
	go a.Run(ctx)
	all := []netip.Addr{netip.MustParseAddr("198.18.10.11"), netip.MustParseAddr("198.18.10.12"),
		netip.MustParseAddr("198.18.10.13"), netip.MustParseAddr("198.18.10.14")}
	for _, p := range []string{"198.18.100.1/32", "198.18.100.2/32"} {
		want := fmt.Sprint(rendezvous.Pick(netip.MustParsePrefix(p), all, 2))
		eventually(t, p+" with two next hops", func() bool { return sp.get(p) == want })
	}
}

// TestNodeEligibility: nodes are next hops as nodes.CarriesLoadBalancerTraffic
// says, for Cluster and Local Services alike, and a change of label or taint
// alone moves them in or out.
func TestNodeEligibility(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	toBeDeleted := v1.Taint{Key: nodes.ToBeDeletedTaint, Effect: v1.TaintEffectNoSchedule}
	plain := node("n1", true, "198.18.10.11")
	keptIn := node("n2", true, "198.18.10.12")
	keptIn.Labels[ExcludeLabel] = "false" // parsed like upstream: not excluded
	out := node("n3", true, "198.18.10.13")
	out.Labels[ExcludeLabel] = "true"
	draining := node("n4", true, "198.18.10.14")
	draining.Spec.Taints = []v1.Taint{toBeDeleted}
	garbage := node("n5", true, "198.18.10.15")
	garbage.Labels[ExcludeLabel] = "garbage" // does not parse: excluded, as upstream
	cs := fake.NewClientset(plain, keptIn, out, draining, garbage,
		lbService("web", false, "198.18.100.1"),
		lbService("local", true, "198.18.100.2"),
		&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "local-1", Labels: map[string]string{discoveryv1.LabelServiceName: "local"}},
			Endpoints: []discoveryv1.Endpoint{
				{Addresses: []string{"198.19.2.5"}, NodeName: ptr.To("n2")},
				{Addresses: []string{"198.19.3.5"}, NodeName: ptr.To("n3")},
				{Addresses: []string{"198.19.4.5"}, NodeName: ptr.To("n4")},
			}},
	)
	sp := &fakeSpeaker{paths: map[netip.Prefix][]netip.Addr{}}
	f := informers.NewSharedInformerFactory(cs, 0)
	a := New(factoryInformers(f), sp, func(*v1.Service) bool { return true }, Options{})
	f.Start(ctx.Done())
	go a.Run(ctx)

	eventually(t, "excluded and draining nodes left out, exclude=false kept", func() bool {
		return sp.get("198.18.100.1/32") == "[198.18.10.11 198.18.10.12]" && sp.get("198.18.100.2/32") == "[198.18.10.12]"
	})

	// The autoscaler taints n1, drops the taint of n4, and n3's label turns false.
	update := func(n *v1.Node) {
		t.Helper()
		if _, err := cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	plain = plain.DeepCopy()
	plain.Spec.Taints = []v1.Taint{{Key: "example.com/other", Effect: v1.TaintEffectNoSchedule}, toBeDeleted}
	update(plain)
	eventually(t, "tainted node withdrawn", func() bool { return sp.get("198.18.100.1/32") == "[198.18.10.12]" })
	draining = draining.DeepCopy()
	draining.Spec.Taints = nil
	update(draining)
	out = out.DeepCopy()
	out.Labels[ExcludeLabel] = "false"
	update(out)
	eventually(t, "untainted and re-included nodes back", func() bool {
		return sp.get("198.18.100.1/32") == "[198.18.10.12 198.18.10.13 198.18.10.14]" &&
			sp.get("198.18.100.2/32") == "[198.18.10.12 198.18.10.13 198.18.10.14]"
	})
}
