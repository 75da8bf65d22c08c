package metal

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metal-ccm/metal-ccm/pkg/powerstate"
)

// gatedSource answers off for every machine once release has a value for
// the question (nil: at once), and counts its questions.
type gatedSource struct {
	mu      sync.Mutex
	asked   int
	off     bool
	release chan struct{}
}

func (g *gatedSource) Shutdown(ctx context.Context, _ powerstate.Machine) (bool, error) {
	g.mu.Lock()
	g.asked++
	gate, off := g.release, g.off
	g.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	return off, nil
}
func (g *gatedSource) Close() error            { return nil }
func (g *gatedSource) CacheAge() time.Duration { return 10 * time.Second }

func (g *gatedSource) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.asked
}

// waitAsked waits until the source was asked n times (a question runs in
// its own goroutine).
func (g *gatedSource) waitAsked(t *testing.T, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if g.count() >= n {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("the source was asked %d times, want %d", g.count(), n)
}

func memoMachine(name string) powerstate.Machine {
	return powerstate.Machine{Node: &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}}
}

// TestPowerMemo: a question answered at once is returned; answers are reused
// for the source's cache age, asked again in the background after it (the
// last answer returned meanwhile); a first question still out gives
// ErrAnswerPending, and its answer comes with the next call; forget asks
// again at once.
func TestPowerMemo(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	src := &gatedSource{off: true}
	p := newPowerMemo(t.Context(), src)
	p.now = func() time.Time { return now }
	ctx := t.Context()
	x := memoMachine("x")

	// The first answer, once its question is done: a loaded machine may
	// run the question past powerWait, and the caller then gets pending.
	off, err := p.Shutdown(ctx, x)
	for deadline := time.Now().Add(10 * time.Second); errors.Is(err, ErrAnswerPending) && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
		off, err = p.Shutdown(ctx, x)
	}
	if err != nil || !off {
		t.Fatalf("first question: %v, %v; want off", off, err)
	}
	if off, err := p.Shutdown(ctx, x); err != nil || !off || src.count() != 1 {
		t.Errorf("within the cache age: %v, %v after %d questions; want the answer, one question", off, err, src.count())
	}

	// Past the cache age: the last answer at once, a new question out.
	now = now.Add(11 * time.Second)
	src.mu.Lock()
	src.off, src.release = false, make(chan struct{})
	src.mu.Unlock()
	if off, err := p.Shutdown(ctx, x); err != nil || !off {
		t.Errorf("past the cache age: %v, %v; want the last answer (off) while the next is out", off, err)
	}
	src.waitAsked(t, 2)
	close(src.release)
	deadline := time.Now().Add(5 * time.Second)
	for off, _ := p.Shutdown(ctx, x); off; off, _ = p.Shutdown(ctx, x) {
		if time.Now().After(deadline) {
			t.Fatal("the new answer (on) never replaced the last one")
		}
		time.Sleep(time.Millisecond)
	}

	// A first question still out: pending, no evidence.
	src.mu.Lock()
	src.release = make(chan struct{})
	src.mu.Unlock()
	y := memoMachine("y")
	before := src.count()
	if _, err := p.Shutdown(ctx, y); !errors.Is(err, ErrAnswerPending) {
		t.Errorf("a first question still out: %v, want ErrAnswerPending", err)
	}
	src.waitAsked(t, before+1)
	asked := src.count()
	if _, err := p.Shutdown(ctx, y); !errors.Is(err, ErrAnswerPending) || src.count() != asked {
		t.Errorf("asked again while out: %v, %d questions (was %d); want pending, no new question", err, src.count(), asked)
	}
	close(src.release)

	// forget: asked again at once.
	src.mu.Lock()
	src.release = nil
	src.mu.Unlock()
	asked = src.count()
	p.forget("x")
	_, err = p.Shutdown(ctx, x)
	for deadline := time.Now().Add(10 * time.Second); errors.Is(err, ErrAnswerPending) && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
		_, err = p.Shutdown(ctx, x)
	}
	if err != nil || src.count() != asked+1 {
		t.Errorf("after forget: %v, %d questions (was %d); want one more", err, src.count(), asked)
	}

	// An Off asked long ago (the node was Ready since, nobody asked) is no
	// evidence: pending while the new question is out, never that Off.
	z := memoMachine("z")
	src.mu.Lock()
	src.off, src.release = true, nil
	src.mu.Unlock()
	off, err = p.Shutdown(ctx, z)
	for deadline := time.Now().Add(10 * time.Second); errors.Is(err, ErrAnswerPending) && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
		off, err = p.Shutdown(ctx, z)
	}
	if err != nil || !off {
		t.Fatalf("z's first question: %v, %v; want off", off, err)
	}
	now = now.Add(staleAfter * p.maxAge)
	src.mu.Lock()
	src.off, src.release = false, make(chan struct{})
	src.mu.Unlock()
	if off, err := p.Shutdown(ctx, z); off || !errors.Is(err, ErrAnswerPending) {
		t.Errorf("an answer %d cache ages old: %v, %v; want pending, not the old Off", staleAfter, off, err)
	}
	close(src.release)
}
