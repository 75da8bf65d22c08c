package metal

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"reflect"
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
// start (the BGP sessions, whether Routes and LoadBalancer are offered,
// the loadBalancerClass served).
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

// Reload parses and applies a new config document. Changes of the bgp,
// routes and healthChecks sections, of the pools' routing policy, of
// loadBalancer.class and serveDefaultClass, and adding the first or removing
// the last pool, are logged as needing a restart; everything else applies at
// once.
func (c *Cloud) Reload(data []byte) error {
	cfg, err := config.Parse(data)
	if err != nil {
		return fmt.Errorf("reload cloud config: %w", err)
	}
	st, err := newState(cfg)
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
	var later []string
	// bgp.onStop is read when the replica stops: it applies at once.
	oldBGP, newBGP := old.cfg.BGP, cfg.BGP
	oldBGP.OnStop, newBGP.OnStop = "", ""
	if !reflect.DeepEqual(oldBGP, newBGP) {
		later = append(later, "bgp")
	}
	if !reflect.DeepEqual(old.cfg.Routes, cfg.Routes) {
		later = append(later, "routes")
	}
	if !reflect.DeepEqual(old.cfg.HealthChecks, cfg.HealthChecks) {
		later = append(later, "healthChecks")
	}
	// The replicas' BGP announcer follows the pools at once (it looks at
	// every Service again); the node agents announce only the addresses of
	// the pools they were started with, and the L2 observer and the
	// announce lists are read at start.
	if !reflect.DeepEqual(announcedPools(old.cfg), announcedPools(cfg)) {
		if ann := c.announcer.Load(); ann != nil {
			ann.Resync()
		}
		later = append(later, "loadBalancer.pools[].addresses and announce (for the node agents, L2 and the announce lists; the replicas' BGP announcements follow at once)")
	}
	if !reflect.DeepEqual(poolPolicies(old.cfg), poolPolicies(cfg)) {
		later = append(later, "loadBalancer.pools[].bgpAdvertisements, serviceCommunities")
	}
	// The Services served: the service controller and the announcers were
	// built with the rule of the config read at start (c.rule), and the
	// node agents read the config only at start.
	if cfg.LoadBalancer.Rule() != c.rule {
		later = append(later, "loadBalancer.class and serveDefaultClass")
	}
	if (len(old.pools) == 0) != (len(st.pools) == 0) {
		later = append(later, "loadBalancer.pools (offering LoadBalancer at all)")
	}
	if len(later) > 0 {
		klog.Background().Info("Some changes of the cloud config wait for a restart", "sections", later, "reason", ErrRestartNeeded)
	}
	return nil
}

// poolPolicy is what a pool says of its BGP announcement: read by the
// speakers and announcers at their start.
type poolPolicy struct {
	ads         []config.BGPAdvertisement
	communities []string
}

// announcedPools is each pool's addresses and protocols, as the config
// writes them: what bounds the announcers.
func announcedPools(cfg *config.CloudConfig) map[string][2][]string {
	out := map[string][2][]string{}
	for _, p := range cfg.LoadBalancer.Pools {
		announce := make([]string, len(p.Announce))
		for i, a := range p.Announce {
			announce[i] = string(a)
		}
		out[p.Name] = [2][]string{p.Addresses, announce}
	}
	return out
}

// poolPolicies are the pools' routing policies by pool name.
func poolPolicies(cfg *config.CloudConfig) map[string]poolPolicy {
	out := map[string]poolPolicy{}
	for _, p := range cfg.LoadBalancer.Pools {
		if len(p.BGPAdvertisements) > 0 || len(p.ServiceCommunities) > 0 {
			out[p.Name] = poolPolicy{p.BGPAdvertisements, p.ServiceCommunities}
		}
	}
	return out
}
