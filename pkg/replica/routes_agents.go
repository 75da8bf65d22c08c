package replica

import (
	"context"
	"net/netip"
	"os"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/metal-ccm/metal-ccm/pkg/announcer"
	"github.com/metal-ccm/metal-ccm/pkg/cachetrim"
)

// With bgp.announceFrom Nodes each node's agent announces its own pod
// CIDRs (pkg/agent), and the route controller must still learn which are
// in place to set the nodes' NetworkUnavailable condition. The agents tell
// it through their pods' readiness: an agent is Ready (its /readyz, the
// chart's readiness probe) while every pod CIDR of its node is in its
// speaker. The kubelet writes that state, so the agents need no write
// access at all, and the CCM needs only to read pods in one namespace.
const (
	// AgentPodSelector selects the node agents' pods (the chart's and
	// deploy/node-agent's label).
	AgentPodSelector = "app.kubernetes.io/name=metal-node-agent"
	// defaultAgentNamespace is where the agents run when the CCM does not
	// run in a pod that names its namespace (POD_NAMESPACE).
	defaultAgentNamespace = "kube-system"
)

// agentNamespace is the node agents' namespace: the CCM's own (the chart
// installs both into its release's namespace).
func agentNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	return defaultAgentNamespace
}

// agentRoutes is the route source with announceFrom Nodes: the pod routes
// of the nodes whose agent's pod is Ready. Its informers start at its first
// use: only the leader's route controller asks, so the other replicas
// neither watch nor need the permission.
type agentRoutes struct {
	once  sync.Once
	start func() *agentWatch
	watch *agentWatch
}

func newAgentRoutes(ctx context.Context, cs kubernetes.Interface, namespace string, hopType v1.NodeAddressType) *agentRoutes {
	return &agentRoutes{start: func() *agentWatch { return startAgentWatch(ctx, cs, namespace, hopType) }}
}

func (r *agentRoutes) get() *agentWatch {
	r.once.Do(func() { r.watch = r.start() })
	return r.watch
}

// NodeRoutes are the pod routes of every node whose agent's pod is Ready.
func (r *agentRoutes) NodeRoutes() []announcer.NodeRoute { return r.get().nodeRoutes() }

// NextHopFor is the address a node's pod CIDR of that family is announced
// with by its agent.
func (r *agentRoutes) NextHopFor(node string, v4 bool) (netip.Addr, bool) {
	return r.get().nextHopFor(node, v4)
}

// agentWatch reads the agents' pods and the nodes.
type agentWatch struct {
	pods    corelisters.PodLister
	nodes   corelisters.NodeLister
	hopType v1.NodeAddressType
	synced  []cache.InformerSynced
}

// startAgentWatch starts the informers of the agents' pods (one namespace,
// one label) and of the nodes; they stop with ctx.
func startAgentWatch(ctx context.Context, cs kubernetes.Interface, namespace string, hopType v1.NodeAddressType) *agentWatch {
	podFactory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = AgentPodSelector }),
		informers.WithTransform(cachetrim.Transform))
	nodeFactory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTransform(cachetrim.Transform))
	if hopType == "" {
		hopType = v1.NodeInternalIP
	}
	r := &agentWatch{
		pods:    podFactory.Core().V1().Pods().Lister(),
		nodes:   nodeFactory.Core().V1().Nodes().Lister(),
		hopType: hopType,
		synced: []cache.InformerSynced{podFactory.Core().V1().Pods().Informer().HasSynced,
			nodeFactory.Core().V1().Nodes().Informer().HasSynced},
	}
	podFactory.Start(ctx.Done())
	nodeFactory.Start(ctx.Done())
	return r
}

func (r *agentWatch) nodeRoutes() []announcer.NodeRoute {
	if !r.hasSynced() {
		return nil
	}
	pods, err := r.pods.List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []announcer.NodeRoute
	seen := map[string]bool{}
	for _, p := range pods {
		if p.Spec.NodeName == "" || seen[p.Spec.NodeName] || !agentPodReady(p) {
			continue
		}
		seen[p.Spec.NodeName] = true
		n, err := r.nodes.Get(p.Spec.NodeName)
		if err != nil {
			continue
		}
		for cidr, hop := range announcer.PodRoutesOf(n, r.hopType) {
			out = append(out, announcer.NodeRoute{Node: n.Name, CIDR: cidr, NextHop: hop})
		}
	}
	return out
}

func (r *agentWatch) nextHopFor(node string, v4 bool) (netip.Addr, bool) {
	n, err := r.nodes.Get(node)
	if err != nil {
		return netip.Addr{}, false
	}
	return announcer.NodeAddress(n, r.hopType, v4)
}

func (r *agentWatch) hasSynced() bool {
	for _, s := range r.synced {
		if !s() {
			return false
		}
	}
	return true
}

// agentPodReady: running, not being deleted, and Ready.
func agentPodReady(p *v1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase != v1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}
