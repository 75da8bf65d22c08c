package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/agent"
)

// descOutsidePools is the agent's own; each protocol's metrics are its
// package's (agent.Describe, Agent.Collect).
var descOutsidePools = metrics.NewDesc("metal_ccm_agent_addresses_outside_pools",
	"Addresses in LoadBalancer Services' status that the node agent leaves out because they are in no pool.", nil, nil, metrics.ALPHA, "")

// collector reads the agent's state at scrape time.
type collector struct {
	metrics.BaseStableCollector
	agent *agent.Agent
}

func (c *collector) DescribeWithStability(ch chan<- *metrics.Desc) {
	ch <- descOutsidePools
	agent.Describe(ch)
}

func (c *collector) CollectWithStability(ch chan<- metrics.Metric) {
	ch <- metrics.NewLazyConstMetric(descOutsidePools, metrics.GaugeValue, float64(c.agent.OutsidePools()))
	c.agent.Collect(ch)
}

// serveStatus serves /healthz (200 once the process runs), /readyz (200
// while the agent announces what it should: agent.Ready; 503 with the reason
// otherwise) and /metrics on addr until ctx ends.
func serveStatus(ctx context.Context, addr string, a *agent.Agent) (*http.Server, error) {
	legacyregistry.CustomMustRegister(&collector{agent: a})
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := a.Ready(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	mux.Handle("/metrics", legacyregistry.Handler())
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("status address: %w", err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.FromContext(ctx).Error(err, "Status server stopped")
		}
	}()
	return srv, nil
}
