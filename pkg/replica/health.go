package replica

import (
	"context"
	"net/netip"
	"os"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/announcer"
	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/healthcheck"
	"github.com/metal-ccm/metal-ccm/pkg/lbcontroller"
)

// Event reasons of node health checks, recorded on nodes by the leader.
const (
	// ReasonNodeWithdrawn: the node fails kube-proxy's health check and is
	// left out of the LoadBalancer addresses it carried.
	ReasonNodeWithdrawn = "NodeHealthCheckFailed"
	// ReasonNodeReturned: the node passes again and is announced again.
	ReasonNodeReturned = "NodeHealthCheckPassed"
	// ReasonNoNodeReachable, on a replica's own Pod: no node passes its
	// health check from this replica; every eligible node stays announced.
	ReasonNoNodeReachable = "NoNodeReachable"
	// ReasonNodesReachable, on a replica's own Pod: nodes pass again.
	ReasonNodesReachable = "NodesReachable"
)

var (
	healthTransitions = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      namespace,
		Name:           "node_health_transitions_total",
		Help:           "Changes of a health-check target's state (a node's kube-proxy, or a node of a Local Service), by new state. Every replica checks.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"state"})
	healthCheckDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace:      namespace,
		Name:           "node_health_check_duration_seconds",
		Help:           "Time of one health check, by result (pass or fail). Every replica checks.",
		Buckets:        []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1},
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	healthPings = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      namespace,
		Name:           "node_health_pings_total",
		Help:           "Pings (ICMP echo) of health-check targets' addresses between their HTTP checks (healthChecks.httpInterval), by result (pass: a reply within the timeout). Every replica checks.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	descHealthTargets = metrics.NewDesc(namespace+"_node_health_targets",
		"Health-check targets of this replica by state: healthy, unhealthy, unknown (not checked yet). Reported by every replica.",
		[]string{"state"}, nil, metrics.ALPHA, "")
)

// healthObserver turns the checker's results into metrics.
type healthObserver struct{}

func (healthObserver) Checked(_ netip.AddrPort, passed bool, took time.Duration) {
	result := "fail"
	if passed {
		result = "pass"
	}
	healthCheckDuration.WithLabelValues(result).Observe(took.Seconds())
}

func (healthObserver) Pinged(_ netip.AddrPort, passed bool) {
	result := "fail"
	if passed {
		result = "pass"
	}
	healthPings.WithLabelValues(result).Inc()
}

func (healthObserver) Changed(_ netip.AddrPort, _, to healthcheck.State) {
	healthTransitions.WithLabelValues(to.String()).Inc()
}

// healthChecks are the announcer's health checks from the config; nil when
// they are off.
func (r *Runtime) healthChecks(ctx context.Context, h config.HealthChecks, self podEvents) *announcer.HealthChecks {
	opts, on := healthcheck.FromConfig(h)
	if !on {
		return nil
	}
	if opts.HTTPInterval > opts.Interval {
		if err := healthcheck.PingAvailable(); err != nil {
			klog.FromContext(ctx).Info("Every node health check is an HTTP check: this replica cannot ping (add its group to the host's net.ipv4.ping_group_range)",
				"err", err, "interval", opts.Interval)
		}
	}
	return &announcer.HealthChecks{
		Options:     opts,
		ProxyPort:   h.Port,
		Observer:    healthObserver{},
		Events:      r.nodeHealthEvent,
		Unreachable: self.unreachable,
	}
}

// podEvents records Events on this replica's own Pod, named by the
// POD_NAMESPACE and POD_NAME variables (the chart sets them from the
// Downward API); without them, or outside a pod, it records nothing (the
// log says the same). Every replica has one, unlike the leader's recorder.
type podEvents struct {
	rec record.EventRecorder
	pod *v1.ObjectReference
}

// newPodEvents starts a recorder for this replica's Pod, stopped with ctx.
func newPodEvents(ctx context.Context, cs kubernetes.Interface) podEvents {
	ns, name := os.Getenv("POD_NAMESPACE"), os.Getenv("POD_NAME")
	if ns == "" || name == "" {
		return podEvents{}
	}
	bc := record.NewBroadcaster(record.WithContext(ctx), record.WithCorrelatorOptions(record.CorrelatorOptions{LRUCacheSize: lbcontroller.EventCacheEntries}))
	bc.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	go func() {
		<-ctx.Done()
		bc.Shutdown()
	}()
	return podEvents{rec: bc.NewRecorder(scheme.Scheme, v1.EventSource{Component: eventComponent}),
		pod: &v1.ObjectReference{Kind: "Pod", Namespace: ns, Name: name}}
}

func (p podEvents) unreachable(unreachable bool, nodes int) {
	if p.rec == nil {
		return
	}
	if unreachable {
		p.rec.Eventf(p.pod, v1.EventTypeWarning, ReasonNoNodeReachable,
			"None of the %d eligible nodes passes its health check from this replica: all stay announced (fail open); check this node's network and the nodes' kube-proxy port", nodes)
		return
	}
	p.rec.Eventf(p.pod, v1.EventTypeNormal, ReasonNodesReachable, "Nodes pass their health checks from this replica again")
}

// nodeHealthEvent records a node's withdrawal or return (on the leader,
// whose recorder runs).
func (r *Runtime) nodeHealthEvent(node string, healthy bool, target netip.AddrPort) {
	ref := &v1.ObjectReference{Kind: "Node", Name: node, UID: types.UID(node)}
	if healthy {
		r.Event(ref, v1.EventTypeNormal, ReasonNodeReturned,
			"kube-proxy's health check at %s passes: the node is announced again", target)
		return
	}
	r.Event(ref, v1.EventTypeWarning, ReasonNodeWithdrawn,
		"kube-proxy's health check at %s fails: the node is left out of the LoadBalancer addresses it carried", target)
}

// collectHealth reports the announcer's targets by state.
func collectHealth(ann *announcer.Announcer, ch chan<- metrics.Metric) {
	counts := ann.HealthCounts()
	if counts == nil {
		return
	}
	for _, s := range []healthcheck.State{healthcheck.Healthy, healthcheck.Unhealthy, healthcheck.Unknown} {
		ch <- metrics.NewLazyConstMetric(descHealthTargets, metrics.GaugeValue, float64(counts[s]), s.String())
	}
}
