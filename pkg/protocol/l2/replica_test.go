package l2

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/metal-ccm/metal-ccm/pkg/annotation"
	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/l2/member"
	"github.com/metal-ccm/metal-ccm/pkg/protocol"
	"github.com/metal-ccm/metal-ccm/pkg/rendezvous"
)

const l2TestConfig = `apiVersion: metal-ccm.io/v1alpha1
kind: CloudConfig
loadBalancer:
  pools:
  - {name: l2, addresses: [198.18.0.0/24], announce: [L2]}
  - {name: bgp, addresses: [198.18.1.0/24]}
l2:
  insecureMembership: true
`

// recordingPatcher keeps the last annotation written per Service.
type recordingPatcher struct {
	mu     sync.Mutex
	values map[string]string
	writes int
}

func (p *recordingPatcher) PatchAnnotation(_ context.Context, svc *v1.Service, key, value string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if key != annotation.L2Nodes {
		return fmt.Errorf("annotation %s written", key)
	}
	p.values[svc.Name] = value
	p.writes++
	return nil
}

func (p *recordingPatcher) get(name string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	v, ok := p.values[name]
	return v, ok
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	eventuallyWithin(t, 15*time.Second, what, cond)
}

func eventuallyWithin(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", limit, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestL2ObserverAndWriter runs three agents' memberships and the CCM's
// observer for real on loopback (the nodes' InternalIPs are loopback
// addresses, so that joining them stays on the machine): the observer
// finds the node the agents' rule chooses, the writer puts it on the
// Service with an Event and leaves a Service of a BGP pool alone, and when
// that node's agent dies the annotation follows the new owner.
func TestL2ObserverAndWriter(t *testing.T) {
	cfg, err := config.Parse([]byte(l2TestConfig))
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan string, 10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	nodes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	var agents []*member.Members
	var hops []netip.Addr
	for i := range 3 {
		name := fmt.Sprintf("n%d", i)
		ip := netip.AddrFrom4([4]byte{127, 0, 0, byte(11 + i)})
		hops = append(hops, ip)
		n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: v1.NodeStatus{
			Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}},
			Addresses:  []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: ip.String()}}}}
		if err := nodes.Add(n); err != nil {
			t.Fatal(err)
		}
		m, err := member.Start(ctx, member.Config{Name: name, Addresses: []netip.Addr{ip}, Bind: netip.AddrPortFrom(ip, 0)})
		if err != nil {
			t.Fatal(err)
		}
		agents = append(agents, m)
	}
	for _, m := range agents[1:] {
		if err := m.Join([]netip.AddrPort{agents[0].LocalAddr()}); err != nil {
			t.Fatal(err)
		}
	}

	services := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	o := newObserver(cfg, corelisters.NewNodeLister(nodes), corelisters.NewServiceLister(services), func(*v1.Service) bool { return true })
	o.members, err = member.Start(ctx, member.Config{Name: "ccm", Bind: netip.MustParseAddrPort("127.0.0.1:0"), Observer: true})
	if err != nil {
		t.Fatal(err)
	}
	o.watch.Members = o.members
	// The test joins it by hand: the watcher finds every expected agent
	// alive once it has, and dials nobody.
	if err := o.members.Join([]netip.AddrPort{agents[0].LocalAddr()}); err != nil {
		t.Fatal(err)
	}

	vip := netip.MustParsePrefix("198.18.0.5/32")
	if err := o.watch.Candidates.SetPaths(ctx, vip, hops); err != nil {
		t.Fatal(err)
	}
	owner, _ := rendezvous.Owner(vip, hops)
	ownerName := fmt.Sprintf("n%d", owner.As4()[3]-11)
	eventually(t, "the observer sees the owner "+ownerName, func() bool {
		if r, ok := o.watch.Round(ctx); ok {
			o.decide(ctx, r)
		}
		got, ok := o.Owner(vip.Addr())
		return ok && got == ownerName
	})

	for _, s := range []struct{ name, ip string }{{"web", "198.18.0.5"}, {"bgp", "198.18.1.5"}} {
		svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: s.name},
			Spec:   v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer},
			Status: v1.ServiceStatus{LoadBalancer: v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: s.ip}}}}}
		if err := services.Add(svc); err != nil {
			t.Fatal(err)
		}
	}
	patch := &recordingPatcher{values: map[string]string{}}
	go o.Lead(ctx, protocol.LeaderEnv{PatchAnnotation: patch.PatchAnnotation,
		Event: func(_ runtime.Object, _, reason, format string, args ...any) {
			events <- reason + " " + fmt.Sprintf(format, args...)
		},
		Config: func() *config.CloudConfig { return cfg }})
	o.changed <- struct{}{}
	want := "198.18.0.5=" + ownerName
	eventually(t, "the annotation "+want, func() bool { v, _ := patch.get("web"); return v == want })
	if _, ok := patch.get("bgp"); ok {
		t.Error("the Service of a BGP pool was written")
	}
	select {
	case e := <-events:
		if !strings.Contains(e, ReasonL2NodeChanged) || !strings.Contains(e, want) {
			t.Errorf("Event %q, want %s naming %s", e, ReasonL2NodeChanged, want)
		}
	case <-time.After(5 * time.Second):
		t.Error("no Event")
	}

	// The owner's agent dies: the annotation follows the next choice.
	var rest []netip.Addr
	for i, h := range hops {
		if h == owner {
			agents[i].Shutdown()
			continue
		}
		rest = append(rest, h)
	}
	next, _ := rendezvous.Owner(vip, rest)
	want = "198.18.0.5=" + fmt.Sprintf("n%d", next.As4()[3]-11)
	go func() {
		for ctx.Err() == nil {
			if r, ok := o.watch.Round(ctx); ok {
				o.decide(ctx, r)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	eventually(t, "the annotation "+want+" after the owner died", func() bool { v, _ := patch.get("web"); return v == want })

	// A process that reaches the membership and poses as the dead owner,
	// claiming its name and address from an address of its own: once the
	// observer sees it alive, it is ignored and takes nothing.
	deadName := fmt.Sprintf("n%d", owner.As4()[3]-11)
	rogue, err := member.Start(ctx, member.Config{Name: deadName, Addresses: []netip.Addr{owner}, Bind: netip.MustParseAddrPort("127.0.0.99:0")})
	if err != nil {
		t.Fatal(err)
	}
	defer rogue.Shutdown()
	// The membership takes a dead member's name from another address only
	// once that member is dead, and passes the claim on at its state
	// exchanges (every 10 s): the rogue joins again until the observer
	// has it.
	eventuallyWithin(t, time.Minute, "the observer sees the rogue member", func() bool {
		_ = rogue.Join([]netip.AddrPort{agents[slices.Index(hops, next)].LocalAddr()})
		return slices.ContainsFunc(o.members.Alive(), func(m member.Member) bool { return m.Name == deadName })
	})
	r, ok := o.watch.Round(ctx)
	if !ok {
		t.Fatal("no round")
	}
	if r.Choice.Ignored != 1 || slices.ContainsFunc(r.Choice.Members, func(m member.Member) bool { return m.Name == deadName }) {
		t.Errorf("the rogue counted: members %v, ignored %d", r.Choice.Members, r.Choice.Ignored)
	}
	if got, _ := o.Owner(vip.Addr()); got != want[len("198.18.0.5="):] {
		t.Errorf("with the rogue alive the owner is %q, want %q", got, want[len("198.18.0.5="):])
	}
	if owner, ok := r.Choice.Owners[vip]; !ok || owner != next {
		t.Errorf("with the rogue alive the choice is %v, want %v", owner, next)
	}
}
