package main

import (
	"context"
	"fmt"
	"time"

	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/config"
)

// watchConfig looks at the config file at path until ctx ends. A change
// of the pools that config.AgentsApplyLive allows (BGP pools added,
// removed, changed) is given to apply at once. Other fields the agents
// read (config.RestartFields with config.Agents) are read at start: a
// change stops the agent cleanly with stopFor after a random wait
// (config.RestartDelay), and the pod's restart policy starts it again with
// the new config. Other changes (an inventory, the replicas' own settings)
// change nothing here; an invalid config is refused and the running one
// goes on.
func watchConfig(ctx context.Context, path string, running *config.CloudConfig, apply func(*config.CloudConfig), stopFor func(error)) {
	logger := klog.FromContext(ctx).WithValues("config", path)
	var restart []string
	config.WatchFile(ctx, path, config.WatchInterval, func(data []byte) bool {
		updated, err := config.Parse(data)
		if err != nil {
			logger.Error(err, "Refused the changed cloud config; the running config goes on")
			return true
		}
		if config.AgentsApplyLive(running, updated) {
			// The rest of running stays as read at start: every other
			// field this process reads is unchanged.
			apply(updated)
			running = updated
			logger.Info("Applied the changed pools without a restart")
			return true
		}
		restart = config.RestartsOf(config.ChangedAtRestart(running, updated), config.Agents)
		return len(restart) == 0
	})
	if len(restart) == 0 {
		return
	}
	wait := config.RestartDelay()
	logger.Info("The changed config takes a restart: stopping cleanly to start again", "fields", restart, "in", wait.Round(time.Millisecond))
	select {
	case <-ctx.Done():
	case <-time.After(wait):
		stopFor(fmt.Errorf("%w: %v", config.ErrRestart, restart))
	}
}
