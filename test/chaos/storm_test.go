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

	"github.com/metal-ccm/metal-ccm/test/framework"
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
	tr.set(s.Name, strings.Join(framework.IngressIPs(s), ","))
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

// currentIPs are the addresses a Service's status shows now, comma-separated.
func (tr *tracker) currentIPs(name string) string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.current[name]
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
				if err := createService(ctx, framework.LoadBalancerService(ns, serviceName(prefix, i), framework.WithoutNodePorts)); err != nil {
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

// stormRun is a storm running in the background.
type stormRun struct {
	created atomic.Int64
	done    chan error
}

// startStorm runs storm(ctx, ns, prefix, n, d) in the background.
func startStorm(ctx context.Context, ns, prefix string, n int, d time.Duration) *stormRun {
	s := &stormRun{done: make(chan error, 1)}
	go func() { s.done <- storm(ctx, ns, prefix, n, d, &s.created) }()
	return s
}

// wait waits for the storm to end, and fails the test if it failed.
func (s *stormRun) wait(t *testing.T) {
	t.Helper()
	if err := <-s.done; err != nil {
		t.Fatalf("storm: %v", err)
	}
}

// afterStorm waits for a storm of n Services to end, then, within five
// minutes, until they and (with the lab) the VIP's Service have had
// addresses. It returns how many Services the namespace holds.
func afterStorm(ctx context.Context, t *testing.T, s *stormRun, tr *tracker, n int) int {
	t.Helper()
	s.wait(t)
	want := n
	if lab != nil {
		want++ // the VIP's Service
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if err := tr.waitAssigned(wctx, want); err != nil {
		t.Errorf("after the storm: %v", err)
	}
	return want
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
func vipLoop(ctx context.Context, t *testing.T, ns string, tr *tracker, sessions int) *netlab.RequestLoop {
	t.Helper()
	if lab == nil {
		t.Logf("no request loop: %s", labSkip)
		return nil
	}
	if err := lab.WaitEstablished(ctx, lab.SpeakerAddrs(netlab.IPv4)[:sessions]...); err != nil {
		t.Fatalf("sessions: %v", err)
	}
	if err := createService(ctx, framework.LoadBalancerService(ns, "vip", framework.WithoutNodePorts)); err != nil {
		t.Fatal(err)
	}
	if _, err := waitUntil(ctx, "the VIP's address", func() bool { return tr.firstIP("vip") != "" }); err != nil {
		t.Fatal(err)
	}
	vip := netip.MustParseAddr(tr.firstIP("vip"))
	if err := lab.WaitRoute(ctx, netlab.HostPrefix(vip), lab.NodeAddrs(netlab.IPv4)); err != nil {
		t.Fatal(err)
	}
	if err := lab.ServeVIP(vip); err != nil {
		t.Fatal(err)
	}
	return lab.StartRequests(vip)
}

// endLoop stops a request loop (if any), puts its figures in res, and fails
// the test on any lost request.
func endLoop(t *testing.T, loop *netlab.RequestLoop, res *result) {
	t.Helper()
	if loop == nil {
		return
	}
	sent, failed, errs := loop.Stop()
	res.requests, res.lost = sent, failed
	if failed > 0 {
		t.Errorf("%d of %d requests to the VIP failed: %v", failed, sent, errs)
	}
}
