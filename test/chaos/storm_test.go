package chaos

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// tracker watches the Services of one namespace and remembers, for each, the
// first addresses its status showed and whether they ever changed, and every
// address it saw held by two Services at once (none of the chaos Services
// share addresses).
type tracker struct {
	mu       sync.Mutex
	first    map[string]string    // Service -> its first addresses
	firstAt  map[string]time.Time // when they were seen
	current  map[string]string
	changed  map[string]string // Service -> "first -> later"
	dups     map[string][]string
	holders  map[string]map[string]bool // address -> Services showing it
	cancel   context.CancelFunc
	assigned chan struct{} // a Service got its first address
}

func newTracker(t *testing.T, ns string) *tracker {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tr := &tracker{first: map[string]string{}, firstAt: map[string]time.Time{}, current: map[string]string{},
		changed: map[string]string{}, dups: map[string][]string{}, holders: map[string]map[string]bool{},
		cancel: cancel, assigned: make(chan struct{}, 1)}
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
	inf := f.Core().V1().Services().Informer()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { tr.seen(o) },
		UpdateFunc: func(_, o any) { tr.seen(o) },
		DeleteFunc: func(o any) {
			if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			if s, ok := o.(*v1.Service); ok {
				tr.set(s.Name, "")
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	f.Start(ctx.Done())
	t.Cleanup(func() { cancel(); f.Shutdown() })
	return tr
}

func (tr *tracker) seen(o any) {
	s, ok := o.(*v1.Service)
	if !ok {
		return
	}
	var ips []string
	for _, in := range s.Status.LoadBalancer.Ingress {
		ips = append(ips, in.IP)
	}
	tr.set(s.Name, strings.Join(ips, ","))
}

func (tr *tracker) set(name, ips string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if old := tr.current[name]; old != "" {
		for _, ip := range strings.Split(old, ",") {
			delete(tr.holders[ip], name)
		}
	}
	tr.current[name] = ips
	if ips == "" {
		return
	}
	if first, ok := tr.first[name]; !ok {
		tr.first[name], tr.firstAt[name] = ips, time.Now()
		select {
		case tr.assigned <- struct{}{}:
		default:
		}
	} else if first != ips {
		tr.changed[name] = first + " -> " + ips
	}
	for _, ip := range strings.Split(ips, ",") {
		if tr.holders[ip] == nil {
			tr.holders[ip] = map[string]bool{}
		}
		tr.holders[ip][name] = true
		if len(tr.holders[ip]) > 1 {
			var names []string
			for n := range tr.holders[ip] {
				names = append(names, n)
			}
			slices.Sort(names)
			tr.dups[ip] = names
		}
	}
}

// counts is how many Services got addresses, changed them, and how many
// addresses were seen held twice.
func (tr *tracker) counts() (assigned, changed, dups int) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return len(tr.first), len(tr.changed), len(tr.dups)
}

func (tr *tracker) assignedCount() int {
	a, _, _ := tr.counts()
	return a
}

// problems describes the changed and duplicated addresses.
func (tr *tracker) problems() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return fmt.Sprintf("changed: %v; held twice: %v", tr.changed, tr.dups)
}

// firstIP is the first address a Service showed.
func (tr *tracker) firstIP(name string) string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.first[name]
}

// waitAssigned waits until n Services have had addresses.
func (tr *tracker) waitAssigned(ctx context.Context, n int) error {
	for {
		if got := tr.assignedCount(); got >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d Services have addresses: %w", tr.assignedCount(), n, ctx.Err())
		case <-tr.assigned:
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// serviceName is the i-th storm Service.
func serviceName(prefix string, i int) string { return fmt.Sprintf("%s-%04d", prefix, i) }

func lbService(ns, name string) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1.ServiceSpec{
			Type:     v1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": name},
			Ports:    []v1.ServicePort{{Name: "http", Protocol: v1.ProtocolTCP, Port: 80}},
			// Thousands of Services would exhaust the node port range.
			AllocateLoadBalancerNodePorts: ptr.To(false),
		},
	}
}

// createService creates a Service, retrying for up to two minutes through
// API server outages; an AlreadyExists after a retry counts as created.
func createService(ctx context.Context, svc *v1.Service) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		_, last = client.CoreV1().Services(svc.Namespace).Create(rctx, svc, metav1.CreateOptions{})
		return last == nil || apierrors.IsAlreadyExists(last), nil
	})
	if err != nil {
		return fmt.Errorf("create %s/%s: %w (last: %w)", svc.Namespace, svc.Name, err, last)
	}
	return nil
}

// storm creates n Services named prefix-NNNN over about d with 8 workers,
// in order, and returns when all exist. created counts them as they come.
func storm(ctx context.Context, ns, prefix string, n int, d time.Duration, created *atomic.Int64) error {
	next := make(chan int)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				if err := createService(ctx, lbService(ns, serviceName(prefix, i))); err != nil {
					errs <- fmt.Errorf("create %s: %w", serviceName(prefix, i), err)
					return
				}
				created.Add(1)
			}
		})
	}
	gap := d / time.Duration(max(n, 1))
	tick := time.NewTicker(max(gap, time.Millisecond))
	defer tick.Stop()
	var err error
feed:
	for i := range n {
		select {
		case next <- i:
		case err = <-errs:
			break feed
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
		<-tick.C
	}
	close(next)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return err
}

// newNamespace creates a namespace for a test. At the end, while the test's
// replicas still run (register it after them), its Services are deleted and
// the replicas release them, then the namespace goes.
func newNamespace(t *testing.T, name string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		deleteServices(ctx, t, name)
		err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			l, err := client.CoreV1().Services(name).List(ctx, metav1.ListOptions{})
			return err == nil && len(l.Items) == 0, nil
		})
		if err != nil {
			t.Errorf("the Services of %s were not released: %v", name, err)
		}
		_ = client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
	})
	return name
}

// requestLoop requests http://vip/ from the lab's client namespace every
// 20ms until stopped, each on a new connection with a 2s timeout.
type requestLoop struct {
	sent, failed atomic.Int64
	stop         chan struct{}
	wg           sync.WaitGroup
	mu           sync.Mutex
	firstErrs    []string
}

func startRequests(vip netip.Addr) *requestLoop {
	r := &requestLoop{stop: make(chan struct{})}
	url := "http://" + netip.AddrPortFrom(vip, 80).String() + "/"
	r.wg.Go(func() {
		for {
			select {
			case <-r.stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			if _, err := lab.ClientGet(ctx, url); err != nil {
				r.failed.Add(1)
				r.mu.Lock()
				if len(r.firstErrs) < 5 {
					r.firstErrs = append(r.firstErrs, time.Now().Format("15:04:05.000")+" "+err.Error())
				}
				r.mu.Unlock()
			}
			cancel()
			r.sent.Add(1)
			time.Sleep(20 * time.Millisecond)
		}
	})
	return r
}

// end stops the loop and returns what was sent and what failed.
func (r *requestLoop) end() (sent, failed int, errs []string) {
	close(r.stop)
	r.wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	return int(r.sent.Load()), int(r.failed.Load()), r.firstErrs
}

// serveVIP puts ip on every lab node's loopback and answers HTTP on it, as
// kube-proxy and a backend would.
func serveVIP(t *testing.T, ip netip.Addr) {
	t.Helper()
	for i := range lab.Nodes {
		if err := lab.AddLoopbackVIP(i, ip); err != nil {
			t.Fatal(err)
		}
		if err := lab.ServeHTTP(i, netip.AddrPortFrom(ip, 80).String()); err != nil {
			t.Fatal(err)
		}
	}
}

// deleteServices deletes every Service of a namespace, 8 at a time
// (Services have no delete-collection).
func deleteServices(ctx context.Context, t *testing.T, ns string) {
	l, err := client.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Logf("list the Services of %s: %v", ns, err)
		return
	}
	names := make(chan string)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for n := range names {
				if err := client.CoreV1().Services(ns).Delete(ctx, n, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					t.Logf("delete %s/%s: %v", ns, n, err)
				}
			}
		})
	}
	for _, s := range l.Items {
		names <- s.Name
	}
	close(names)
	wg.Wait()
}

// populate creates n Services named prefix-NNNN, 50 a second, and waits until
// all have addresses.
func populate(ctx context.Context, t *testing.T, ns, prefix string, n int, tr *tracker) {
	t.Helper()
	var created atomic.Int64
	if err := storm(ctx, ns, prefix, n, time.Duration(n)*20*time.Millisecond, &created); err != nil {
		t.Fatal(err)
	}
	if err := tr.waitAssigned(ctx, n); err != nil {
		t.Fatal(err)
	}
}

// vipLoop creates the Service "vip", waits until the router routes its
// address to every node, serves it there, and starts requesting it. Without
// the lab it returns nil.
func vipLoop(ctx context.Context, t *testing.T, ns string, tr *tracker, sessions int) *requestLoop {
	t.Helper()
	if lab == nil {
		t.Logf("no request loop: %s", labSkip)
		return nil
	}
	if err := lab.WaitEstablished(ctx, lab.SpeakerAddrs(netlab.IPv4)[:sessions]...); err != nil {
		t.Fatalf("sessions: %v", err)
	}
	if err := createService(ctx, lbService(ns, "vip")); err != nil {
		t.Fatal(err)
	}
	if _, err := waitUntil(ctx, "the VIP's address", func() bool { return tr.firstIP("vip") != "" }); err != nil {
		t.Fatal(err)
	}
	vip := netip.MustParseAddr(tr.firstIP("vip"))
	if err := lab.WaitRoute(ctx, netip.PrefixFrom(vip, 32), lab.NodeAddrs(netlab.IPv4)); err != nil {
		t.Fatal(err)
	}
	serveVIP(t, vip)
	return startRequests(vip)
}

// endLoop stops a request loop (if any), puts its figures in res, and fails
// the test on any lost request.
func endLoop(t *testing.T, loop *requestLoop, res *result) {
	t.Helper()
	if loop == nil {
		return
	}
	sent, failed, errs := loop.end()
	res.requests, res.lost = sent, failed
	if failed > 0 {
		t.Errorf("%d of %d requests to the VIP failed: %v", failed, sent, errs)
	}
}
