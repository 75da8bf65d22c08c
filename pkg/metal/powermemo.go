package metal

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/metal-ccm/metal-ccm/pkg/powerstate"
)

// ErrAnswerPending is InstanceShutdown's error for a node whose source has
// not answered yet: its first question is still out. It is no evidence
// (the node is not shut down) and no news (no Event).
var ErrAnswerPending = errors.New("the power-state source's first answer about the machine is still out")

// Bounds of the questions the provider asks its power-state source.
const (
	// powerWait is the longest InstanceShutdown waits for a question it
	// started. Upstream's node lifecycle controller asks about its
	// NotReady nodes one after the other: a BMC that takes its whole
	// timeout (seconds) for each would stretch the controller's pass over
	// N nodes to N timeouts, and every other node's turn with it.
	powerWait = 250 * time.Millisecond
	// powerMinAge is how long an answer is reused when the source has no
	// cache age of its own (powerstate.Cached).
	powerMinAge = time.Second
	// staleAfter, in cache ages, is when the last answer stops standing in
	// for the one being asked for: a node asked about all along is asked
	// again every cache age, so its last answer is younger than that plus
	// one question; an older one is treated as no answer.
	staleAfter = 3
)

// powerMemo asks the power-state source in the background and remembers its
// last answer about each node, so that a caller (the node lifecycle
// controller, out-of-service, fencing) gets an answer at once: the one of
// the last question, while a new question is out once that answer is
// older than the source's cache age; for a node never asked, or whose last
// answer is older than staleAfter cache ages, the answer of a question
// that takes at most powerWait, else ErrAnswerPending. The
// source is asked once per node at a time and at most once per cache age,
// however many callers ask, which also bounds the cost of reading a
// machine's settings and files.
type powerMemo struct {
	src    powerstate.Source
	ctx    context.Context // the provider's: questions out end with it
	maxAge time.Duration
	now    func() time.Time

	mu     sync.Mutex
	byNode map[string]*memoEntry
}

type memoEntry struct {
	have bool // an answer came
	off  bool
	err  error
	at   time.Time
	// out is closed when the question out ends; nil while none is out.
	out chan struct{}
}

func newPowerMemo(ctx context.Context, src powerstate.Source) *powerMemo {
	age := powerMinAge
	if c, ok := src.(powerstate.Cached); ok && c.CacheAge() > age {
		age = c.CacheAge()
	}
	return &powerMemo{src: src, ctx: ctx, maxAge: age, now: time.Now, byNode: map[string]*memoEntry{}}
}

// Shutdown is the source's answer about m, as powerMemo says.
func (p *powerMemo) Shutdown(ctx context.Context, m powerstate.Machine) (bool, error) {
	p.mu.Lock()
	e, ok := p.byNode[m.Node.Name]
	if !ok {
		e = &memoEntry{}
		p.byNode[m.Node.Name] = e
	}
	if e.have && p.now().Sub(e.at) < p.maxAge {
		off, err := e.off, e.err
		p.mu.Unlock()
		return off, err
	}
	if e.out == nil {
		e.out = make(chan struct{})
		go p.ask(e, m)
	}
	out, off, err := e.out, e.off, e.err
	// The last answer stands while the next one comes, unless it is older
	// than a few cache ages: nobody asked meanwhile (the node was Ready),
	// and an old Off is no evidence about a machine powered on since.
	recent := e.have && p.now().Sub(e.at) < staleAfter*p.maxAge
	p.mu.Unlock()
	if recent {
		return off, err
	}
	t := time.NewTimer(powerWait)
	defer t.Stop()
	select {
	case <-out:
		p.mu.Lock()
		defer p.mu.Unlock()
		return e.off, e.err
	case <-t.C:
		return false, ErrAnswerPending
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// ask asks the source about m with the provider's context (the source
// bounds the question by its own timeout) and keeps the answer.
func (p *powerMemo) ask(e *memoEntry, m powerstate.Machine) {
	off, err := p.src.Shutdown(p.ctx, m)
	p.mu.Lock()
	defer p.mu.Unlock()
	e.have, e.off, e.err, e.at = true, off, err, p.now()
	close(e.out)
	e.out = nil
}

// forget drops what is known of node's machine (it was just powered off
// through its BMC): the next question asks again.
func (p *powerMemo) forget(node string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e, ok := p.byNode[node]; ok && e.out == nil {
		delete(p.byNode, node)
	} else if ok {
		e.have = false
	}
}
