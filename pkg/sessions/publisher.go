package sessions

import (
	"context"
	"math/rand/v2"
	"os"
	"time"

	"k8s.io/klog/v2"
)

// Defaults of a Publisher's timing. At 5,000 node agents a router's
// restart changes every agent's sessions at once: with these, the writes
// spread over Jitter (5,000 in 10 s, 500/s, the rate at which 5,000
// kubelets renew their node Leases all the time), and each agent writes at
// most once per MinInterval however its sessions flap (5,000 in 30 s at
// worst, 167/s). Nothing is written while nothing changes.
const (
	DefaultPoll        = 2 * time.Second
	DefaultMinInterval = 30 * time.Second
	DefaultJitter      = 10 * time.Second
)

// Apply writes the server-side apply body of the Lease named name.
type Apply func(ctx context.Context, name string, body []byte) error

// Publisher writes one process's sessions Lease when they change.
type Publisher struct {
	// Role, Pod and Node say who writes (State).
	Role, Pod, Node string
	// Namespace is the Lease's (the pod's).
	Namespace string
	// Owner is the pod, when its UID is known.
	Owner Owner
	// Peers reads the sessions now (Since is set by the publisher).
	Peers func() []Peer
	// Apply writes.
	Apply Apply
	// Poll, MinInterval and Jitter: zero takes the defaults.
	Poll, MinInterval, Jitter time.Duration

	pace pacer
}

// Run polls Peers and writes the Lease on change until ctx ends.
func (p *Publisher) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithValues("lease", p.Namespace+"/"+LeaseName(p.Pod))
	poll := p.Poll
	if poll <= 0 {
		poll = DefaultPoll
	}
	p.pace = pacer{minInterval: p.MinInterval, jitter: p.Jitter}
	if p.pace.minInterval <= 0 {
		p.pace.minInterval = DefaultMinInterval
	}
	if p.pace.jitter <= 0 {
		p.pace.jitter = DefaultJitter
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		now := time.Now()
		if peers, ok := p.pace.observe(p.Peers(), now); ok {
			body, err := applyBody(p.Namespace, p.Owner, State{Role: p.Role, Pod: p.Pod, Node: p.Node, Peers: peers, Written: now})
			if err == nil {
				err = p.Apply(ctx, LeaseName(p.Pod), body)
			}
			p.pace.wrote(key(peers), now, err == nil)
			if err != nil {
				logger.Info("Cannot publish the sessions' state; retrying later", "err", err)
			} else {
				logger.V(2).Info("Published the sessions' state", "sessions", key(peers))
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// pacer decides when to write: on change only, at most once per
// minInterval, a change's first write after a random part of jitter. It
// has no clock of its own (observe and wrote are told the time).
type pacer struct {
	minInterval, jitter time.Duration
	// rand returns a number in [0, n); nil: math/rand/v2.
	rand func(n int64) int64

	last      []Peer    // as last observed, with their Since
	written   string    // key of what was last written
	hasWrite  bool      // something was written (or tried)
	lastWrite time.Time // when
	due       time.Time // when the pending change may be written; zero: none pending
}

// observe takes the peers seen at now and says whether to write them (with
// their Since) now.
func (c *pacer) observe(peers []Peer, now time.Time) ([]Peer, bool) {
	c.last = stamp(c.last, peers, now)
	if c.hasWrite && key(c.last) == c.written {
		c.due = time.Time{}
		return nil, false
	}
	if c.due.IsZero() {
		c.due = now.Add(time.Duration(c.random(int64(c.jitter))))
		if c.hasWrite {
			c.due = later(c.due, c.lastWrite.Add(c.minInterval))
		}
	}
	if now.Before(c.due) {
		return nil, false
	}
	return c.last, true
}

// wrote records a write (or a failed one, which counts against the rate
// too, so that an API server that refuses is not asked more often).
func (c *pacer) wrote(k string, now time.Time, ok bool) {
	c.hasWrite, c.lastWrite = true, now
	c.due = now.Add(c.minInterval)
	if ok {
		c.written = k
		c.due = time.Time{}
	} else {
		c.written = "\x00failed" // never a key: the next observation writes again
	}
}

func (c *pacer) random(n int64) int64 {
	if n <= 0 {
		return 0
	}
	if c.rand != nil {
		return c.rand(n)
	}
	return rand.Int64N(n) //nolint:gosec // spreads writes in time; nothing secret
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// ForPod is a Publisher for the pod the Downward API names in
// POD_NAMESPACE, POD_NAME and POD_UID (the chart sets them); false when
// the first two are not set (outside a pod).
func ForPod(role, node string, peers func() []Peer, apply func(namespace string) Apply) (*Publisher, bool) {
	ns, pod := os.Getenv("POD_NAMESPACE"), os.Getenv("POD_NAME")
	if ns == "" || pod == "" {
		return nil, false
	}
	return &Publisher{
		Role: role, Pod: pod, Node: node, Namespace: ns,
		Owner: Owner{Name: pod, UID: os.Getenv("POD_UID")},
		Peers: peers, Apply: apply(ns),
	}, true
}
