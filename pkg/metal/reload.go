package metal

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/config"
)

// ReloadInterval is how often WatchConfig looks at the config file. A mounted
// ConfigMap changes by a symlink swap, which a poll sees like any write.
const ReloadInterval = 2 * time.Second

var (
	configReloads = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      namespace,
		Name:           "config_reloads_total",
		Help:           "Reloads of the cloud-config file by result: success or failure.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	configLastReloadOK = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace:      namespace,
		Name:           "config_last_reload_successful",
		Help:           "1 when the last reload of the cloud-config file applied (or none was needed), 0 when it was refused.",
		StabilityLevel: metrics.ALPHA,
	})
)

// ErrRestartNeeded marks config changes that take effect only at the next
// start (config.RestartFields).
var ErrRestartNeeded = errors.New("takes effect at the next restart")

// WatchConfig reloads the config file at path when its content changes,
// until ctx ends. A valid config replaces the running one at once (nodes,
// pools); an invalid one is refused, logged and counted, and the running
// config goes on.
func (c *Cloud) WatchConfig(ctx context.Context, path string) {
	logger := klog.FromContext(ctx).WithValues("config", path)
	configLastReloadOK.Set(1)
	last, _ := os.ReadFile(path) //nolint:gosec // the operator's --cloud-config
	lastSum := sha256.Sum256(last)
	t := time.NewTicker(ReloadInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		data, err := os.ReadFile(path) //nolint:gosec // the operator's --cloud-config
		if err != nil {
			// A ConfigMap update swaps a symlink: a read can fail in between.
			continue
		}
		sum := sha256.Sum256(data)
		if bytes.Equal(sum[:], lastSum[:]) {
			continue
		}
		lastSum = sum
		if err := c.Reload(data); err != nil {
			configReloads.WithLabelValues("failure").Inc()
			configLastReloadOK.Set(0)
			logger.Error(err, "Refused the changed cloud config; the running config goes on")
			continue
		}
		configReloads.WithLabelValues("success").Inc()
		configLastReloadOK.Set(1)
		logger.Info("Applied the changed cloud config")
		c.retryFailed(ctx)
	}
}

// Reload parses and applies a new config document. Changes of
// config.RestartFields are logged as waiting for a restart; everything else
// applies at once.
func (c *Cloud) Reload(data []byte) error {
	cfg, err := config.Parse(data)
	if err != nil {
		return fmt.Errorf("reload cloud config: %w", err)
	}
	c.swap.Lock()
	defer c.swap.Unlock()
	st, err := newState(cfg, *c.env.Load())
	if err != nil {
		return fmt.Errorf("reload cloud config: %w", err)
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
	later := make([]string, 0, len(changed))
	for _, f := range changed {
		if f.Path == "loadBalancer.pools[].addresses" || f.Path == "loadBalancer.pools[].announce" {
			// The roles that read the pools live (the replicas' BGP
			// announcer) follow at once: they look at every Service again.
			c.replica.Resync()
		}
		later = append(later, f.Path)
	}
	if len(later) > 0 {
		klog.Background().Info("Some changes of the cloud config wait for a restart (docs/reference/cloud-config.md says what follows at once)", "fields", later, "reason", ErrRestartNeeded)
	}
	return nil
}
