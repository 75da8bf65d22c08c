package metal

import (
	"context"
	"fmt"

	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/config"
)

var (
	configReloads = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      namespace,
		Name:           "config_reloads_total",
		Help:           "Reloads of the cloud-config file by result: success (applied), failure (refused: it did not validate) or restart (it changes a field the replicas read at start: the replica restarts).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	configLastReloadOK = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace:      namespace,
		Name:           "config_last_reload_successful",
		Help:           "1 when the last reload of the cloud-config file applied (or none was needed), 0 when it was refused.",
		StabilityLevel: metrics.ALPHA,
	})
)

// WatchConfig reloads the config file at path when its content changes,
// until ctx ends. A valid config replaces the running one at once (nodes,
// pools); an invalid one is refused, logged and counted, and the running
// config goes on. A change of a field the replicas read only at start
// (config.RestartFields) is applied where it can be, and returned as
// config.ErrRestart: the manager stops cleanly and starts again.
func (c *Cloud) WatchConfig(ctx context.Context, path string) error {
	logger := klog.FromContext(ctx).WithValues("config", path)
	configLastReloadOK.Set(1)
	var restart []string
	config.WatchFile(ctx, path, config.WatchInterval, func(data []byte) bool {
		later, err := c.Reload(data)
		if err != nil {
			configReloads.WithLabelValues("failure").Inc()
			configLastReloadOK.Set(0)
			logger.Error(err, "Refused the changed cloud config; the running config goes on")
			return true
		}
		configLastReloadOK.Set(1)
		c.retryFailed(ctx)
		if restart = config.RestartsOf(later, config.Replicas); len(restart) > 0 {
			configReloads.WithLabelValues("restart").Inc()
			return false
		}
		configReloads.WithLabelValues("success").Inc()
		// The node agents watch the same file and restart for their own.
		logger.Info("Applied the changed cloud config", "restartsNodeAgents", config.RestartsOf(later, config.Agents))
		return true
	})
	if len(restart) > 0 {
		return fmt.Errorf("%w: %v", config.ErrRestart, restart)
	}
	return nil
}

// Reload parses and applies a new config document, and returns the
// config.RestartFields it changes: those wait for a restart of the
// processes that read them at start; everything else applies at once.
func (c *Cloud) Reload(data []byte) ([]config.RestartField, error) {
	cfg, err := config.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("reload cloud config: %w", err)
	}
	c.swap.Lock()
	defer c.swap.Unlock()
	st, err := newState(cfg, *c.env.Load())
	if err != nil {
		return nil, fmt.Errorf("reload cloud config: %w", err)
	}
	old := c.state.Load()
	c.state.Store(st)
	// Calls that loaded the old state may still use its source: a source's
	// Close must let them end (with an error at worst).
	if err := old.power.Close(); err != nil {
		klog.Background().Error(err, "Cannot close the replaced power-state source")
	}
	c.lb.alloc.SetPools(st.pools)
	changed := config.ChangedAtRestart(old.cfg, cfg)
	for _, f := range changed {
		if f.Path == "loadBalancer.pools[].addresses" || f.Path == "loadBalancer.pools[].announce" {
			// The roles that read the pools live (the replicas' BGP
			// announcer) follow at once: they look at every Service again.
			c.replica.Resync()
			break
		}
	}
	return changed, nil
}
