// Package redfish is the "redfish" power-state source: it reads a machine's
// ComputerSystem.PowerState from its BMC's Redfish service, over TLS, with
// a session (reused until the BMC refuses it) or basic auth. It also powers
// a machine off (ComputerSystem.Reset, ForceOff), for fencing.
//
// Only PowerState Off is evidence of a shutdown: On, PoweringOn,
// PoweringOff, no PowerState, no answer, a timeout, refused credentials, a
// certificate that does not verify, a malformed answer or a system that does
// not exist all say "not shut down" (with an error unless the answer was On),
// so that nothing is concluded from a BMC that cannot tell.
package redfish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/powerstate"
	"github.com/metal-ccm/metal-ccm/pkg/redfish"
)

// Name is the source's name in nodes.powerState.source.
const Name = "redfish"

func init() { powerstate.Register(Name, New) }

var (
	// ErrNoAnswer marks a question the BMC did not answer in time.
	ErrNoAnswer = errors.New("the BMC did not answer in time")
	// ErrNotOnOrOff marks a PowerState that is neither On nor Off (a
	// transition, or none): no evidence either way.
	ErrNotOnOrOff = errors.New("the BMC's PowerState is neither On nor Off")
	// ErrClosed marks a question to a source that was closed (replaced by a
	// reloaded config): it asks no BMC, so that it makes no session that
	// nothing would end.
	ErrClosed = errors.New("the power-state source is closed")
)

// Source asks BMCs over Redfish. Each BMC is asked by one question at a
// time, at most maxInFlight BMCs at once, and an answer is reused for
// cacheAge.
type Source struct {
	cfg      settings
	inFlight chan struct{}
	now      func() time.Time
	closed   atomic.Bool

	mu   sync.Mutex
	bmcs map[string]*bmcState // by endpoint
}

var _ powerstate.Fencer = (*Source)(nil)

// bmcState is what the source keeps of one BMC. Its fields are guarded by
// ask, which also keeps one question at a time on the BMC, but for client,
// which Close takes without waiting for a question.
type bmcState struct {
	ask         sync.Mutex
	client      atomic.Pointer[redfish.Client]
	fingerprint string                      // of the settings client was made from
	systems     map[redfish.Selector]string // each selected system's URI, once found
	answers     map[redfish.Selector]answer
}

// answer is a BMC's last word on a system.
type answer struct {
	at          time.Time
	fingerprint string
	off         bool
	err         error
}

// New builds the source from its settings; it needs nothing of the cluster.
func New(raw json.RawMessage, _ powerstate.Env) (powerstate.Source, error) {
	cfg, err := parseSettings(raw)
	if err != nil {
		return nil, err
	}
	return &Source{cfg: cfg, inFlight: make(chan struct{}, cfg.maxInFlight), now: time.Now, bmcs: map[string]*bmcState{}}, nil
}

// Shutdown reports whether the machine's BMC says its system's power is
// Off.
func (s *Source) Shutdown(ctx context.Context, m powerstate.Machine) (bool, error) {
	b, err := parseMachine(m.Settings)
	if err != nil {
		count(resultSettings)
		return false, err
	}
	st := s.state(b.endpoint.String())
	st.ask.Lock()
	defer st.ask.Unlock()
	if a, ok := st.answers[b.system]; ok && a.fingerprint == b.fingerprint && s.now().Sub(a.at) < s.cfg.cacheAge {
		cachedAnswers.Inc()
		return a.off, a.err
	}
	release, err := s.acquire(ctx, b)
	if err != nil {
		return false, err
	}
	defer release()
	qctx, cancel := context.WithTimeout(ctx, s.cfg.timeout)
	defer cancel()
	start := s.now()
	cs, err := st.system(qctx, b, s.cfg)
	requestDuration.Observe(s.now().Sub(start).Seconds())
	off, err := conclude(b, cs, err)
	st.answers[b.system] = answer{at: s.now(), fingerprint: b.fingerprint, off: off, err: err}
	return off, err
}

// conclude turns an answer into a conclusion: only Off is a shutdown.
func conclude(b bmc, cs *redfish.ComputerSystem, err error) (bool, error) {
	var nerr net.Error
	switch {
	case err != nil && (errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &nerr) && nerr.Timeout())):
		count(resultTimeout)
		return false, fmt.Errorf("BMC %s: %w: %w", b.endpoint, ErrNoAnswer, err)
	case errors.Is(err, redfish.ErrUnauthorized):
		count(resultUnauthorized)
		return false, fmt.Errorf("BMC %s: %w", b.endpoint, err)
	case err != nil:
		count(resultError)
		return false, fmt.Errorf("BMC %s: %w", b.endpoint, err)
	case cs.PowerState == redfish.PowerOff:
		count(resultOff)
		return true, nil
	case cs.PowerState == redfish.PowerOn:
		count(resultOn)
		return false, nil
	default:
		count(resultOther)
		return false, fmt.Errorf("BMC %s, system %s: %w: %q", b.endpoint, cs.ID, ErrNotOnOrOff, cs.PowerState)
	}
}

// PowerOff powers the machine off through its BMC (ComputerSystem.Reset,
// ForceOff), and forgets the BMC's last answer about it.
func (s *Source) PowerOff(ctx context.Context, m powerstate.Machine) error {
	b, err := parseMachine(m.Settings)
	if err != nil {
		return err
	}
	st := s.state(b.endpoint.String())
	st.ask.Lock()
	defer st.ask.Unlock()
	release, err := s.acquire(ctx, b)
	if err != nil {
		return err
	}
	defer release()
	qctx, cancel := context.WithTimeout(ctx, s.cfg.timeout)
	defer cancel()
	delete(st.answers, b.system)
	cs, err := st.system(qctx, b, s.cfg)
	if err == nil {
		err = st.client.Load().Reset(qctx, cs, redfish.ResetForceOff)
	}
	if err != nil {
		return fmt.Errorf("BMC %s: power off: %w", b.endpoint, err)
	}
	klog.FromContext(ctx).Info("Powered a machine off through its BMC", "node", klog.KObj(m.Node), "machine", m.ID,
		"endpoint", b.endpoint.String(), "system", cs.ID)
	return nil
}

// acquire takes a place among the maxInFlight questions.
func (s *Source) acquire(ctx context.Context, b bmc) (func(), error) {
	if s.closed.Load() {
		return nil, fmt.Errorf("BMC %s: %w", b.endpoint, ErrClosed)
	}
	select {
	case s.inFlight <- struct{}{}:
		return func() { <-s.inFlight }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("BMC %s: %w", b.endpoint, ctx.Err())
	}
}

func (s *Source) state(endpoint string) *bmcState {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.bmcs[endpoint]
	if !ok {
		st = &bmcState{systems: map[redfish.Selector]string{}, answers: map[redfish.Selector]answer{}}
		s.bmcs[endpoint] = st
	}
	return st
}

// Close ends the BMCs' sessions, all within the source's timeout (a BMC
// that does not answer by then ends its session itself, at its session
// timeout), and forgets the answers. Questions under way end as they may;
// later ones fail with ErrClosed.
func (s *Source) Close() error {
	s.closed.Store(true)
	s.mu.Lock()
	bmcs := s.bmcs
	s.bmcs = map[string]*bmcState{}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.timeout)
	defer cancel()
	var wg sync.WaitGroup
	places := make(chan struct{}, s.cfg.maxInFlight)
	for _, st := range bmcs {
		c := st.client.Swap(nil)
		if c == nil {
			continue
		}
		wg.Go(func() {
			select {
			case places <- struct{}{}:
				defer func() { <-places }()
				_ = c.Close(ctx)
			case <-ctx.Done():
				c.CloseIdleConnections()
			}
		})
	}
	wg.Wait()
	return nil
}

// CacheAge is how long an answer is reused (settings.cacheAge).
func (s *Source) CacheAge() time.Duration { return s.cfg.cacheAge }
