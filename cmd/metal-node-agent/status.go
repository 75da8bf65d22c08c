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

var (
	descSession = metrics.NewDesc("metal_ccm_agent_bgp_session_up",
		"1 when the node agent's BGP session to a peer is established, else 0.",
		[]string{"peer", "state"}, nil, metrics.ALPHA, "")
	descPrefixes = metrics.NewDesc("metal_ccm_agent_bgp_announced_prefixes",
		"Prefixes the node agent announces.", nil, nil, metrics.ALPHA, "")
	descOutsidePools = metrics.NewDesc("metal_ccm_agent_addresses_outside_pools",
		"Addresses in LoadBalancer Services' status that the node agent leaves out because no pool announced with its protocols (BGP, L2) holds them.", nil, nil, metrics.ALPHA, "")
	descL2Answering = metrics.NewDesc("metal_ccm_agent_l2_answered_addresses",
		"L2 addresses the node agent answers ARP or Neighbor Solicitations for.", nil, nil, metrics.ALPHA, "")
	descL2Takeovers = metrics.NewDesc("metal_ccm_agent_l2_takeovers_total",
		"Times the node agent began to answer for an L2 address.", nil, nil, metrics.ALPHA, "")
	descL2Members = metrics.NewDesc("metal_ccm_agent_l2_members",
		"L2 agents the node agent sees alive in the membership, itself included.", nil, nil, metrics.ALPHA, "")
	descL2Majority = metrics.NewDesc("metal_ccm_agent_l2_majority",
		"1 while the L2 agents the node agent sees alive are a majority of the expected ones (it may answer), else 0.", nil, nil, metrics.ALPHA, "")
)

// collector reads the agent's sessions at scrape time.
type collector struct {
	metrics.BaseStableCollector
	agent *agent.Agent
}

func (c *collector) DescribeWithStability(ch chan<- *metrics.Desc) {
	ch <- descSession
	ch <- descPrefixes
	ch <- descOutsidePools
	ch <- descL2Answering
	ch <- descL2Takeovers
	ch <- descL2Members
	ch <- descL2Majority
}

func (c *collector) CollectWithStability(ch chan<- metrics.Metric) {
	for _, p := range c.agent.Sessions() {
		up := 0.0
		if p.Established() {
			up = 1
		}
		ch <- metrics.NewLazyConstMetric(descSession, metrics.GaugeValue, up, p.Address.String(), p.State)
	}
	ch <- metrics.NewLazyConstMetric(descPrefixes, metrics.GaugeValue, float64(c.agent.Prefixes()))
	ch <- metrics.NewLazyConstMetric(descOutsidePools, metrics.GaugeValue, float64(c.agent.OutsidePools()))
	if st, ok := c.agent.L2Stats(); ok {
		majority := 0.0
		if st.Quorum {
			majority = 1
		}
		ch <- metrics.NewLazyConstMetric(descL2Answering, metrics.GaugeValue, float64(st.Answering))
		ch <- metrics.NewLazyConstMetric(descL2Takeovers, metrics.CounterValue, float64(st.Takeovers))
		ch <- metrics.NewLazyConstMetric(descL2Members, metrics.GaugeValue, float64(st.Members))
		ch <- metrics.NewLazyConstMetric(descL2Majority, metrics.GaugeValue, majority)
	}
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
