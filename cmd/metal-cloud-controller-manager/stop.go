package main

import (
	"context"
	"time"

	"k8s.io/klog/v2"
)

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
	logger.Info("Stopping on a signal", "timeout", stopTimeout)
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
