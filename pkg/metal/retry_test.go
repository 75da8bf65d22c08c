package metal

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/metal-ccm/metal-ccm/pkg/annotation"
	"github.com/metal-ccm/metal-ccm/pkg/ipam"
)

// retryConfig has one pool of two addresses, and none named "second".
const retryConfig = `apiVersion: metal-ccm.io/v1alpha1
kind: CloudConfig
loadBalancer:
  pools:
  - {name: two, addresses: [198.18.140.1-198.18.140.2]}
`

// requeues records the keys the provider asks the service controller to
// sync again.
type requeues struct {
	mu   sync.Mutex
	keys []string
}

func (r *requeues) add(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keys = append(r.keys, key)
}

func (r *requeues) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.keys
	r.keys = nil
	return out
}

func lbService(name string, age time.Duration, kv ...string) *v1.Service {
	svc := annotated(v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: []v1.ServicePort{{Protocol: v1.ProtocolTCP, Port: 80}}}, kv...)
	svc.Name = name
	svc.CreationTimestamp = metav1.NewTime(time.Now().Add(-age))
	return svc
}

// newRetryCloud is a provider fed by an informer over svcs, whose requeues
// are recorded.
func newRetryCloud(t *testing.T, svcs ...*v1.Service) (*Cloud, *requeues) {
	t.Helper()
	return newInformedCloud(t, retryConfig, svcs...)
}

// newInformedCloud is a provider of config doc fed by an informer over
// svcs, whose requeues are recorded.
func newInformedCloud(t *testing.T, doc string, svcs ...*v1.Service) (*Cloud, *requeues) {
	t.Helper()
	c, _ := newTestCloud(t, doc)
	objs := make([]runtime.Object, 0, len(svcs))
	for _, s := range svcs {
		objs = append(objs, s)
	}
	f := informers.NewSharedInformerFactory(fake.NewClientset(objs...), 0)
	c.SetInformers(f)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.lb.synced) {
		t.Fatal("Services not synced")
	}
	r := &requeues{}
	c.SetRequeue(r.add)
	return c, r
}

func withStatus(svc *v1.Service, ip string) *v1.Service {
	out := svc.DeepCopy()
	out.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: ip}}
	return out
}

// TestRequeue: each way a refused Service may become servable asks the
// service controller, in-process, to sync that Service (and only it) again,
// and that sync then serves it.
func TestRequeue(t *testing.T) {
	ctx := context.Background()
	ensure := func(c *Cloud, svc *v1.Service) error {
		_, err := c.EnsureLoadBalancer(ctx, "cluster", svc, nil)
		return err
	}
	for _, tc := range []struct {
		name string
		svcs []*v1.Service
		// refuse makes the Services wait; free must requeue exactly want.
		refuse, free func(t *testing.T, c *Cloud, svcs []*v1.Service)
		want         []string
	}{
		{
			name: "an address is freed",
			svcs: []*v1.Service{lbService("holder", 3*time.Hour), lbService("other", 2*time.Hour), lbService("waiting", time.Hour)},
			refuse: func(t *testing.T, c *Cloud, s []*v1.Service) {
				for _, held := range s[:2] {
					if err := ensure(c, held); err != nil {
						t.Fatal(err)
					}
				}
				if err := ensure(c, s[2]); !errors.Is(err, ipam.ErrPoolExhausted) {
					t.Fatalf("waiting: %v, want the pool exhausted", err)
				}
			},
			free: func(t *testing.T, c *Cloud, s []*v1.Service) {
				if err := c.EnsureLoadBalancerDeleted(ctx, "cluster", s[0]); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"ns/waiting"},
		},
		{
			name: "the config is reloaded",
			svcs: []*v1.Service{lbService("wants-second", time.Hour, string(annotation.NamePool), "second")},
			refuse: func(t *testing.T, c *Cloud, s []*v1.Service) {
				if err := ensure(c, s[0]); !errors.Is(err, ipam.ErrUnknownPool) {
					t.Fatalf("wants-second: %v, want an unknown pool", err)
				}
			},
			free: func(t *testing.T, c *Cloud, _ []*v1.Service) {
				if _, err := c.Reload([]byte(retryConfig + "  - {name: second, addresses: [198.18.141.0/30]}\n")); err != nil {
					t.Fatal(err)
				}
				c.retryFailed(ctx) // as WatchConfig does after a reload
			},
			want: []string{"ns/wants-second"},
		},
		{
			name: "a newer Service shows an older one's address",
			svcs: []*v1.Service{lbService("older", 2*time.Hour), lbService("newer", time.Hour)},
			refuse: func(_ *testing.T, c *Cloud, s []*v1.Service) {
				c.observeService(withStatus(s[0], "198.18.140.1"))
			},
			free: func(_ *testing.T, c *Cloud, s []*v1.Service) {
				c.observeService(withStatus(s[1], "198.18.140.1"))
			},
			want: []string{"ns/newer"},
		},
		{
			name: "an older Service shows a newer one's address",
			svcs: []*v1.Service{lbService("older", 2*time.Hour), lbService("newer", time.Hour)},
			refuse: func(_ *testing.T, c *Cloud, s []*v1.Service) {
				c.observeService(withStatus(s[1], "198.18.140.1"))
			},
			free: func(_ *testing.T, c *Cloud, s []*v1.Service) {
				c.observeService(withStatus(s[0], "198.18.140.1"))
			},
			want: []string{"ns/newer"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, r := newRetryCloud(t, tc.svcs...)
			tc.refuse(t, c, tc.svcs)
			if got := r.take(); len(got) != 0 {
				t.Fatalf("requeued %v before anything changed", got)
			}
			tc.free(t, c, tc.svcs)
			if got := r.take(); !slices.Equal(got, tc.want) {
				t.Fatalf("requeued %v, want %v", got, tc.want)
			}
			for _, key := range tc.want {
				i := slices.IndexFunc(tc.svcs, func(s *v1.Service) bool { return "ns/"+s.Name == key })
				if err := ensure(c, tc.svcs[i]); err != nil {
					t.Errorf("the requeued sync of %s: %v", key, err)
				}
			}
		})
	}
}

// TestRequeueWithoutController: without a service controller (SetRequeue
// never called, or given nil) nothing is requeued and nothing fails.
func TestRequeueWithoutController(t *testing.T) {
	c, _ := newRetryCloud(t, lbService("a", time.Hour))
	c.SetRequeue(nil)
	c.setFailed("ns/a", &refusal{ReasonPoolExhausted, "no free address"})
	c.retryFailed(context.Background())
}
