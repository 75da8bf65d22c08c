package lbcontroller

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	servicehelper "k8s.io/cloud-provider/service/helpers"
	"k8s.io/utils/ptr"

	"github.com/metal-ccm/metal-ccm/pkg/lbrule"
)

// fakeBalancer gives 198.18.100.N to the Nth Service it sees, or refuses
// the Services named in refuse.
type fakeBalancer struct {
	mu      sync.Mutex
	ips     map[string]string
	deleted []string
	refuse  map[string]error
	nodes   []int // len(nodes) of each EnsureLoadBalancer call
}

var errNoAddress = errors.New("no address")

func (f *fakeBalancer) GetLoadBalancer(context.Context, string, *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	return nil, false, nil
}

func (f *fakeBalancer) GetLoadBalancerName(context.Context, string, *v1.Service) string { return "" }

func (f *fakeBalancer) EnsureLoadBalancer(_ context.Context, _ string, svc *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nodes = append(f.nodes, len(nodes))
	if err := f.refuse[svc.Name]; err != nil {
		return nil, err
	}
	ip, ok := f.ips[svc.Name]
	if !ok {
		ip = "198.18.100." + strconv.Itoa(1+len(f.ips))
		f.ips[svc.Name] = ip
	}
	return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: ip}}}, nil
}

func (f *fakeBalancer) UpdateLoadBalancer(context.Context, string, *v1.Service, []*v1.Node) error {
	return errors.New("UpdateLoadBalancer must not be called")
}

func (f *fakeBalancer) EnsureLoadBalancerDeleted(_ context.Context, _ string, svc *v1.Service) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleted = append(f.deleted, svc.Name)
	delete(f.ips, svc.Name)
	return nil
}

func (f *fakeBalancer) wasDeleted(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Contains(f.deleted, name)
}

func lb(name string) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: []v1.ServicePort{{Port: 80}}},
	}
}

// serviceGetter gets Services of namespace ns from cs, failing t on error.
func serviceGetter(ctx context.Context, t *testing.T, cs kubernetes.Interface) func(name string) *v1.Service {
	return func(name string) *v1.Service {
		t.Helper()
		s, err := cs.CoreV1().Services("ns").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

// waiter waits until cond holds, failing t with what after 10 s.
func waiter(ctx context.Context, t *testing.T) func(what string, cond func() bool) {
	return func(what string, cond func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true,
			func(context.Context) (bool, error) { return cond(), nil }); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
}

func TestController(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	other := lb("other-class")
	other.Spec.LoadBalancerClass = ptr.To("example.com/other")
	deleting := lb("deleting")
	deleting.DeletionTimestamp = ptr.To(metav1.Now())
	deleting.Finalizers = []string{"example.com/keep"}
	cs := fake.NewClientset(lb("web"), lb("refused"), other, deleting)
	bal := &fakeBalancer{ips: map[string]string{}, refuse: map[string]error{"refused": errNoAddress}}
	f := informers.NewSharedInformerFactory(cs, 0)
	c, err := New(bal, lbrule.Rule{}, cs, cs, f.Core().V1().Services(), "cluster")
	if err != nil {
		t.Fatal(err)
	}
	f.Start(ctx.Done())
	go c.Run(ctx, 2)

	get, eventually := serviceGetter(ctx, t, cs), waiter(ctx, t)

	events := func(reason string) []string {
		l, err := cs.CoreV1().Events("").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range l.Items {
			if e.Reason == reason && e.Source.Component == EventComponent {
				out = append(out, e.InvolvedObject.Name)
			}
		}
		return out
	}
	eventually("web gets its finalizer and address", func() bool {
		s := get("web")
		return servicehelper.HasLBFinalizer(s) && len(s.Status.LoadBalancer.Ingress) == 1 && s.Status.LoadBalancer.Ingress[0].IP == "198.18.100.1"
	})
	eventually("refused is refused", func() bool { return slices.Contains(events(ReasonSyncFailed), "refused") })
	if s := get("refused"); servicehelper.HasLBFinalizer(s) || len(s.Status.LoadBalancer.Ingress) != 0 {
		t.Errorf("a refused Service got a finalizer or an address: %+v", s)
	}
	eventually("Events", func() bool {
		return slices.Contains(events(ReasonEnsured), "web") && slices.Contains(events(ReasonSyncFailed), "refused")
	})
	if s := get("other-class"); len(s.Finalizers) != 0 || len(s.Status.LoadBalancer.Ingress) != 0 {
		t.Errorf("a Service of another class was touched: %+v", s)
	}
	if s := get("deleting"); len(s.Finalizers) != 1 || len(s.Status.LoadBalancer.Ingress) != 0 {
		t.Errorf("a Service being deleted was given a finalizer or an address: %+v", s)
	}
	bal.mu.Lock()
	if _, asked := bal.ips["deleting"]; asked {
		t.Error("EnsureLoadBalancer was called for a Service being deleted")
	}
	bal.mu.Unlock()
	bal.mu.Lock()
	for _, n := range bal.nodes {
		if n != 0 {
			t.Errorf("EnsureLoadBalancer was given %d nodes", n)
		}
	}
	bal.mu.Unlock()

	// No longer of type LoadBalancer: the address is freed, the status
	// cleared and the finalizer removed.
	web := get("web")
	web.Spec.Type = v1.ServiceTypeClusterIP
	if _, err := cs.CoreV1().Services("ns").Update(ctx, web, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("web cleaned up", func() bool {
		s := get("web")
		return bal.wasDeleted("web") && !servicehelper.HasLBFinalizer(s) && len(s.Status.LoadBalancer.Ingress) == 0
	})
	eventually("DeletedLoadBalancer Event", func() bool { return slices.Contains(events(ReasonDeleted), "web") })

	// The provider gives an address at last; a change of the Service brings
	// it back (TestRequeue: without a change).
	bal.mu.Lock()
	delete(bal.refuse, "refused")
	bal.mu.Unlock()
	refused := get("refused")
	refused.Annotations = map[string]string{"example.com/nudge": "1"}
	if _, err := cs.CoreV1().Services("ns").Update(ctx, refused, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("refused gets an address and the finalizer after the change", func() bool {
		s := get("refused")
		return len(s.Status.LoadBalancer.Ingress) == 1 && servicehelper.HasLBFinalizer(s)
	})
}

func TestNeedsSync(t *testing.T) {
	base := lb("s")
	base.Finalizers = []string{servicehelper.LoadBalancerCleanupFinalizer}
	for _, tc := range []struct {
		name   string
		change func(*v1.Service)
		want   bool
	}{
		{"nothing", func(*v1.Service) {}, false},
		{"a label", func(s *v1.Service) { s.Labels = map[string]string{"a": "b"} }, false},
		{"an annotation", func(s *v1.Service) { s.Annotations = map[string]string{"a": "b"} }, true},
		{"a port", func(s *v1.Service) { s.Spec.Ports[0].Port = 81 }, true},
		{"the status", func(s *v1.Service) {
			s.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: "198.18.100.9"}}
		}, true},
		{"the finalizer removed", func(s *v1.Service) { s.Finalizers = nil }, true},
		{"the UID (re-created)", func(s *v1.Service) { s.UID = "other" }, true},
		{"the type", func(s *v1.Service) { s.Spec.Type = v1.ServiceTypeNodePort }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cur := base.DeepCopy()
			tc.change(cur)
			if got := needsSync(lbrule.Rule{}, nil, base, cur); got != tc.want {
				t.Errorf("needsSync = %v, want %v", got, tc.want)
			}
		})
	}
	np := lb("np")
	np.Spec.Type = v1.ServiceTypeNodePort
	np2 := np.DeepCopy()
	np2.Spec.Ports[0].Port = 81
	if needsSync(lbrule.Rule{}, nil, np, np2) {
		t.Error("a change of a Service that never wanted a load balancer needs a sync")
	}
	cur := base.DeepCopy()
	cur.Spec.Ports[0].Port = 81
	if needsSync(lbrule.Rule{Class: "metal-ccm.io/bgp"}, nil, base, cur) {
		t.Error("a change of a Service of a class not served needs a sync")
	}
	// The provider's own status annotations need no sync; others still do.
	outputs := map[string]bool{"example.com/status": true}
	st := base.DeepCopy()
	st.Annotations = map[string]string{"example.com/status": "announced"}
	if needsSync(lbrule.Rule{}, outputs, base, st) {
		t.Error("a change of an output annotation alone needs a sync")
	}
	other := st.DeepCopy()
	other.Annotations["metal-ccm.io/pool"] = "tiny"
	if !needsSync(lbrule.Rule{}, outputs, st, other) {
		t.Error("a change of another annotation beside an output one needs no sync")
	}
}

// TestRequeue: a refused Service is synced again at once when the provider
// asks with Requeue, without any change of the Service and long before the
// back-off (minRetryDelay) would bring it back.
func TestRequeue(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cs := fake.NewClientset(lb("waiting"))
	bal := &fakeBalancer{ips: map[string]string{}, refuse: map[string]error{"waiting": errNoAddress}}
	f := informers.NewSharedInformerFactory(cs, 0)
	c, err := New(bal, lbrule.Rule{}, cs, cs, f.Core().V1().Services(), "cluster")
	if err != nil {
		t.Fatal(err)
	}
	f.Start(ctx.Done())
	go c.Run(ctx, 1)

	asked := func() int {
		bal.mu.Lock()
		defer bal.mu.Unlock()
		return len(bal.nodes)
	}
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true,
		func(context.Context) (bool, error) { return asked() == 1, nil }); err != nil {
		t.Fatalf("waiting was not refused: %v", err)
	}
	bal.mu.Lock()
	delete(bal.refuse, "waiting")
	bal.mu.Unlock()
	start := time.Now()
	c.Requeue(Key(lb("waiting")))
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, minRetryDelay/2, true, func(ctx context.Context) (bool, error) {
		s, err := cs.CoreV1().Services("ns").Get(ctx, "waiting", metav1.GetOptions{})
		return err == nil && len(s.Status.LoadBalancer.Ingress) == 1 && servicehelper.HasLBFinalizer(s), nil
	})
	if err != nil {
		t.Fatalf("no address within %s of Requeue: %v", minRetryDelay/2, err)
	}
	t.Logf("served %s after Requeue", time.Since(start).Round(time.Millisecond))
}
