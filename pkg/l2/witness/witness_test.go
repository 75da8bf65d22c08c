package witness

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// store is one Lease with the API server's optimistic concurrency: an
// update must carry the resourceVersion it read. down makes every request
// fail, as for an agent cut from the API server.
type store struct {
	mu    sync.Mutex
	lease coordinationv1.Lease
	rv    int
	down  map[string]bool // by caller
}

type client struct {
	s  *store
	id string
}

var gr = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}

func (c client) Get(_ context.Context, name string) (*coordinationv1.Lease, error) {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if c.s.down[c.id] {
		return nil, apierrors.NewServiceUnavailable("cut")
	}
	if name != c.s.lease.Name {
		return nil, apierrors.NewNotFound(gr, name)
	}
	return c.s.lease.DeepCopy(), nil
}

func (c client) Update(_ context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if c.s.down[c.id] {
		return nil, apierrors.NewServiceUnavailable("cut")
	}
	if l.ResourceVersion != c.s.lease.ResourceVersion {
		return nil, apierrors.NewConflict(gr, l.Name, nil)
	}
	c.s.rv++
	c.s.lease = *l.DeepCopy()
	c.s.lease.ResourceVersion = strconv.Itoa(c.s.rv)
	return c.s.lease.DeepCopy(), nil
}

func (s *store) holder() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *s.lease.Spec.HolderIdentity
}

func (s *store) cut(id string, down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down[id] = down
}

func fast() Timing {
	return Timing{Duration: 300 * time.Millisecond, RenewDeadline: 200 * time.Millisecond, RenewEvery: 50 * time.Millisecond,
		RetryEvery: 20 * time.Millisecond, RequestTimeout: 100 * time.Millisecond}
}

// eventually polls cond for up to 10 s: the test says what must happen,
// not how fast.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("never: %s", what)
}

// never checks that cond stays false for a while.
func never(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if cond() {
			t.Fatalf("%s", what)
		}
	}
}

func TestWitness(t *testing.T) {
	s := &store{lease: coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "w", ResourceVersion: "0"}}, down: map[string]bool{}}
	a, b := New(client{s, "a"}, "w", "a", fast()), New(client{s, "b"}, "w", "b", fast())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	actx, stopA := context.WithCancel(ctx)
	go a.Run(actx)
	go b.Run(ctx)

	t.Run("unwanted, nobody takes it", func(t *testing.T) {
		never(t, "taken while not wanted", 200*time.Millisecond, func() bool { return s.holder() != "" || a.Held() || b.Held() })
	})
	t.Run("one holder at a time", func(t *testing.T) {
		a.Want(true)
		eventually(t, "a holds", a.Held)
		b.Want(true)
		never(t, "both hold", 500*time.Millisecond, func() bool { return a.Held() && b.Held() || s.holder() != "a" })
	})
	t.Run("the holder cut from the API server lets go before the peer takes it", func(t *testing.T) {
		s.cut("a", true)
		done := make(chan struct{})
		both := false
		go func() {
			defer close(done)
			for !b.Held() {
				both = both || (a.Held() && b.Held())
				time.Sleep(time.Millisecond)
			}
		}()
		eventually(t, "b holds", b.Held)
		<-done
		if both || a.Held() {
			t.Fatal("both held the witness")
		}
		if s.holder() != "b" {
			t.Fatalf("holder %q, want b", s.holder())
		}
		s.cut("a", false)
		never(t, "a took it back from a renewing b", 500*time.Millisecond, func() bool { return a.Held() || s.holder() != "b" })
	})
	t.Run("a stopped holder's Lease is taken after its duration", func(t *testing.T) {
		// b holds; a stops and the Lease stays with b. Now stop b instead:
		// build a third for a's place.
		stopA()
		c := New(client{s, "c"}, "w", "c", fast())
		go c.Run(ctx)
		c.Want(true)
		never(t, "c took a renewed Lease", 400*time.Millisecond, c.Held)
		b.Want(false)
		if b.Held() {
			t.Fatal("b holds the vote while not wanted")
		}
		eventually(t, "c holds once b stopped renewing", c.Held)
	})
}
