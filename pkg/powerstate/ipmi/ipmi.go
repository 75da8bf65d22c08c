// Package ipmi is the "ipmi" power-state source: it asks a machine's BMC,
// over IPMI 2.0 on the LAN (RMCP+), for its chassis power state. It uses
// github.com/bougou/go-ipmi, a pure-Go client (no ipmitool to ship, no
// process per question) that speaks RMCP+ with the common cipher suites.
//
// Only Off is evidence of a shutdown: an answer On, no answer, a timeout or
// refused credentials all say "not shut down" (with an error when there was
// no answer), so that nothing is concluded from a BMC that cannot be
// reached.
package ipmi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/bougou/go-ipmi/pkg/client"
	"github.com/bougou/go-ipmi/pkg/command/chassis"
	"github.com/bougou/go-ipmi/pkg/types"

	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/powerstate"
)

// Name is the source's name in nodes.powerState.source.
const Name = "ipmi"

func init() { powerstate.Register(Name, New) }

// ErrNoAnswer marks a question the BMC did not answer in time.
var ErrNoAnswer = errors.New("the BMC did not answer in time")

// Source asks BMCs over IPMI. Each BMC is asked by one question at a time,
// at most maxInFlight BMCs at once, and an answer is reused for cacheAge.
type Source struct {
	cfg      settings
	inFlight chan struct{}
	now      func() time.Time
	ask      func(ctx context.Context, b bmc, timeout time.Duration) (on bool, err error)
	powerOff func(ctx context.Context, b bmc, timeout time.Duration) error

	mu   sync.Mutex
	bmcs map[string]*bmcState // by address
}

// bmcState is one BMC's last answer, and the lock that keeps one question
// at a time on it.
type bmcState struct {
	ask    sync.Mutex
	mu     sync.Mutex
	at     time.Time
	off    bool
	err    error
	cached bool // an answer is held
}

// New builds the source from its settings; it needs nothing of the
// environment.
func New(raw json.RawMessage, _ powerstate.Env) (powerstate.Source, error) {
	cfg, err := parseSettings(raw)
	if err != nil {
		return nil, err
	}
	return &Source{cfg: cfg, inFlight: make(chan struct{}, cfg.maxInFlight), now: time.Now, ask: chassisPowerOn,
		powerOff: chassisPowerDown, bmcs: map[string]*bmcState{}}, nil
}

var _ powerstate.Fencer = (*Source)(nil)

// PowerOff powers the machine off through its BMC (Chassis Control, power
// down: at once, without asking the operating system), for fencing. The
// held answer is forgotten, so that the next question asks the BMC again.
func (s *Source) PowerOff(ctx context.Context, m powerstate.Machine) error {
	b, err := parseMachine(m.Settings, s.cfg)
	if err != nil {
		return err
	}
	st := s.state(b.addr.String())
	st.ask.Lock()
	defer st.ask.Unlock()
	select {
	case s.inFlight <- struct{}{}:
		defer func() { <-s.inFlight }()
	case <-ctx.Done():
		return fmt.Errorf("BMC %s: %w", b.addr, ctx.Err())
	}
	st.forget()
	if err := s.powerOff(ctx, b, s.cfg.timeout); err != nil {
		return fmt.Errorf("BMC %s: power down: %w", b.addr, err)
	}
	klog.FromContext(ctx).Info("Powered a machine off through its BMC", "node", klog.KObj(m.Node), "machine", m.ID, "address", b.addr.String())
	return nil
}

func (st *bmcState) forget() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.cached = false
}

// Shutdown reports whether the machine's BMC says its power is off.
func (s *Source) Shutdown(ctx context.Context, m powerstate.Machine) (bool, error) {
	b, err := parseMachine(m.Settings, s.cfg)
	if err != nil {
		count(resultSettings)
		return false, err
	}
	st := s.state(b.addr.String())
	st.ask.Lock()
	defer st.ask.Unlock()
	if off, err, ok := st.fresh(s.now(), s.cfg.cacheAge); ok {
		cachedAnswers.Inc()
		return off, err
	}
	select {
	case s.inFlight <- struct{}{}:
		defer func() { <-s.inFlight }()
	case <-ctx.Done():
		return false, fmt.Errorf("BMC %s: %w", b.addr, ctx.Err())
	}
	start := s.now()
	on, err := s.ask(ctx, b, s.cfg.timeout)
	requestDuration.Observe(s.now().Sub(start).Seconds())
	off := false
	switch {
	case err != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrNoAnswer)):
		count(resultTimeout)
		err = fmt.Errorf("BMC %s: %w: %w", b.addr, ErrNoAnswer, err)
	case err != nil:
		count(resultError)
		err = fmt.Errorf("BMC %s: %w", b.addr, err)
	case on:
		count(resultOn)
	default:
		count(resultOff)
		off = true
	}
	st.set(s.now(), off, err)
	return off, err
}

// Close forgets the answers; no session outlives a question.
func (s *Source) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bmcs = map[string]*bmcState{}
	return nil
}

func (s *Source) state(addr string) *bmcState {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.bmcs[addr]
	if !ok {
		st = &bmcState{}
		s.bmcs[addr] = st
	}
	return st
}

// fresh is the held answer while it is younger than age.
func (st *bmcState) fresh(now time.Time, age time.Duration) (off bool, err error, ok bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.cached || now.Sub(st.at) >= age {
		return false, nil, false
	}
	return st.off, st.err, true
}

func (st *bmcState) set(at time.Time, off bool, err error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.at, st.off, st.err, st.cached = at, off, err, true
}

// chassisPowerOn opens an RMCP+ session with the BMC, asks its chassis
// status and closes the session, all within timeout.
func chassisPowerOn(ctx context.Context, b bmc, timeout time.Duration) (bool, error) {
	on := false
	err := session(ctx, b, timeout, func(ctx context.Context, c *client.Client) error {
		st, err := c.GetChassisStatus(ctx)
		if err != nil {
			return fmt.Errorf("chassis status: %w", err)
		}
		on = st.PowerIsOn
		return nil
	})
	return on, err
}

// chassisPowerDown opens an RMCP+ session with the BMC, orders its chassis
// to power down (at once, without the operating system) and closes the
// session, all within timeout.
func chassisPowerDown(ctx context.Context, b bmc, timeout time.Duration) error {
	return session(ctx, b, timeout, func(ctx context.Context, c *client.Client) error {
		if _, err := c.ChassisControl(ctx, chassis.ChassisControlPowerDown); err != nil {
			return fmt.Errorf("chassis control: %w", err)
		}
		return nil
	})
}

// session runs do in an RMCP+ session with the BMC, all within timeout.
func session(ctx context.Context, b bmc, timeout time.Duration, do func(context.Context, *client.Client) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := client.NewClient(b.addr.Addr().String(), int(b.addr.Port()), b.user, b.pass)
	if err != nil {
		return err
	}
	// ctx bounds the whole question; the library's own timeout, on each
	// UDP exchange, is longer, so that a silent BMC ends as ErrNoAnswer.
	c.WithTimeout(timeout + time.Second).WithRetry(0).WithCipherSuiteID(types.CipherSuiteID(b.cipherSuite))
	done := make(chan error, 1)
	go func() {
		if err := c.Connect(ctx); err != nil {
			done <- fmt.Errorf("session: %w", err)
			return
		}
		defer func() { _ = c.Close(context.WithoutCancel(ctx)) }()
		done <- do(ctx, c)
	}()
	select {
	case err := <-done:
		if deadline, ok := ctx.Deadline(); err != nil && ok && !time.Now().Before(deadline) {
			// The library gave up at ctx's deadline (its socket's read
			// deadline is ctx's, which may pass a moment before ctx
			// itself says so): no answer.
			return fmt.Errorf("%w: %w", ErrNoAnswer, err)
		}
		return err
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", ErrNoAnswer, ctx.Err())
	}
}

// CacheAge is how long an answer is reused (settings.cacheAge).
func (s *Source) CacheAge() time.Duration { return s.cfg.cacheAge }
