package main

import (
	"context"
	"errors"
	"time"

	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/config"
)

// restartForConfig stops the manager cleanly, as a signal does, after a
// random wait (config.RestartDelay), because a changed config takes a
// restart (err wraps config.ErrRestart): the pod's restart policy starts
// it again with the new config.
func (m *manager) restartForConfig(err error) {
	wait := config.RestartDelay()
	klog.Background().Info("The changed config takes a restart: stopping cleanly to start again", "fields", err, "in", wait.Round(time.Millisecond))
	select {
	case <-m.ctx.Done():
	case <-time.After(wait):
		m.stopFor(err)
	}
}

// stopTimeout bounds the work after SIGTERM: stopping the controllers,
// handing the Lease over, finding out whether another replica runs (at
// most twice the leader-election retry period and a second: 5s by default;
// only asked by a speaker with bgp.onStop Auto) and closing the BGP sessions. The chart's
// terminationGracePeriodSeconds (30s) leaves room for it.
const stopTimeout = 10 * time.Second

// stop runs once the upstream command returned on a signal. The
// controllers already stopped with m.ctx (controllerInitializers ties them
// to it); what is left is the Lease and the every-replica work.
func (m *manager) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	logger := klog.Background().WithName("stop")
	ctx = klog.NewContext(ctx, logger)
	if cause := context.Cause(m.ctx); errors.Is(cause, config.ErrRestart) {
		logger.Info("Stopping to start again with the changed config", "cause", cause, "timeout", stopTimeout)
	} else {
		logger.Info("Stopping on a signal", "timeout", stopTimeout)
	}
	others := func() bool { return false }
	if m.election != nil {
		m.election.stopElecting(ctx)
		others = func() bool { return m.election.othersRun(ctx) }
	}
	if m.replica == nil {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.replica.StopInEveryReplica(ctx, others)
	}()
	select {
	case <-done:
		logger.Info("Stopped")
	case <-ctx.Done():
		logger.Info("Gave up waiting for the every-replica work to stop", "timeout", stopTimeout)
	}
}
