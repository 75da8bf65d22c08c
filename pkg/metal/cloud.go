// Package metal is the built-in "metal" cloud provider: it treats the user's own
// network as the cloud. Nodes are matched to an inventory of machines and to
// subnet topology rules.
package metal

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	certlisters "k8s.io/client-go/listers/certificates/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/ipam"
	"github.com/metal-ccm/metal-ccm/pkg/lbcontroller"
	"github.com/metal-ccm/metal-ccm/pkg/lbrule"
	"github.com/metal-ccm/metal-ccm/pkg/powerstate"
	_ "github.com/metal-ccm/metal-ccm/pkg/powerstate/builtin" // the power-state sources
	"github.com/metal-ccm/metal-ccm/pkg/replica"
)

// ProviderName is the name given to --cloud-provider.
const ProviderName = "metal"

// eventComponent is the source component of the Events this provider records.
const eventComponent = "metal-cloud-controller-manager"

func init() {
	cloudprovider.RegisterCloudProvider(ProviderName, func(r io.Reader) (cloudprovider.Interface, error) {
		cfg, err := config.Load(r)
		if err != nil {
			return nil, err
		}
		return New(cfg)
	})
}

// Cloud is the metal provider. Its methods are safe for concurrent use.
type Cloud struct {
	// rule is which Services are served, from the config read at start:
	// the service controller, the informers' handlers and the announcers
	// are built with it, so that a reload does not change it.
	rule     lbrule.Rule
	state    atomic.Pointer[state]
	recorder atomic.Pointer[record.EventRecorder]
	lb       *lbState
	// replica is what every replica runs, whoever leads (pkg/replica).
	replica *replica.Runtime
	// power: the last power-state conclusion about each node.
	power powerEvidence
	// nodes: the leader's Nodes (SetInformers), for the out-of-service
	// taint, and nodeInformer their changes.
	nodes        corelisters.NodeLister
	nodeInformer cache.SharedIndexInformer
	// csrs: with nodes.kubeletServing.approveCSRs at start, the
	// CertificateSigningRequests (SetInformers), and csrKick their changes.
	csrs    certlisters.CertificateSigningRequestLister
	csrKick chan struct{}
	// statusKick wakes the leader's Service status writer.
	statusKick chan struct{}
	// env is what power-state sources are built with: no cluster client
	// until Initialize (the replica leads). swap orders the state swaps of
	// Reload and Initialize.
	env  atomic.Pointer[powerstate.Env]
	swap sync.Mutex
}

// state is everything derived from one config, swapped as a whole.
type state struct {
	cfg   *config.CloudConfig
	nodes *nodeIndex
	power powerstate.Source
	// memo asks power and remembers its answers (InstanceShutdown).
	memo  *powerMemo
	pools []*ipam.Pool
}

var _ cloudprovider.Interface = (*Cloud)(nil)

// New builds the provider from a validated config.
func New(cfg *config.CloudConfig) (*Cloud, error) {
	st, err := newState(cfg, powerstate.Env{})
	if err != nil {
		return nil, err
	}
	c := &Cloud{rule: cfg.LoadBalancer.Rule(), lb: &lbState{alloc: ipam.New(st.pools), informed: make(chan struct{})}, statusKick: make(chan struct{}, 1)}
	c.state.Store(st)
	c.env.Store(&powerstate.Env{})
	c.replica = &replica.Runtime{Config: func() *config.CloudConfig { return c.state.Load().cfg }, Wants: c.wantsLoadBalancer, Event: c.eventf}
	registerMetrics(c)
	return c, nil
}

func newState(cfg *config.CloudConfig, env powerstate.Env) (*state, error) {
	nodes := newNodeIndex(&cfg.Nodes)
	ps := cfg.Nodes.PowerState
	if !powerstate.Registered(ps.Source) {
		return nil, field.NotSupported(field.NewPath("nodes", "powerState", "source"), ps.Source, powerstate.Names())
	}
	power, err := powerstate.New(ps.Source, ps.Settings, env)
	if err != nil {
		return nil, fmt.Errorf("nodes.powerState.settings: %w", err)
	}
	if _, ok := power.(powerstate.Fencer); ps.Fencing.Enabled && !ok {
		_ = power.Close()
		return nil, field.Invalid(field.NewPath("nodes", "powerState", "fencing", "enabled"), true,
			fmt.Sprintf("power-state source %s cannot power machines off: fencing needs one that can (ipmi, redfish)", ps.Source))
	}
	return &state{cfg: cfg, nodes: nodes, power: power, memo: newPowerMemo(env.Ctx(), power), pools: buildPools(cfg.LoadBalancer.Pools)}, nil
}

// buildPools turns the config's pools, parsed by its validation, into the
// allocator's.
func buildPools(in []config.Pool) []*ipam.Pool {
	out := make([]*ipam.Pool, 0, len(in))
	for i := range in {
		p := &in[i]
		pool := &ipam.Pool{Name: p.Name, AutoAssign: p.AutoAssign == nil || *p.AutoAssign, Ranges: p.Ranges()}
		if len(p.Namespaces) > 0 {
			pool.Namespaces = map[string]bool{}
			for _, ns := range p.Namespaces {
				pool.Namespaces[ns] = true
			}
		}
		if p.ServiceSelector != nil {
			pool.Selector = p.Selector()
		}
		out = append(out, pool)
	}
	return out
}

// Initialize starts the Event recorder. The upstream manager calls it once the
// replica leads, before it starts the controllers.
func (c *Cloud) Initialize(clientBuilder cloudprovider.ControllerClientBuilder, stop <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-stop
		cancel()
	}()
	logger := klog.FromContext(ctx).WithValues("provider", ProviderName)
	client, err := clientBuilder.Client("metal-cloud-provider")
	if err != nil {
		logger.Error(err, "Events will not be recorded: no API client")
		return
	}
	bc := record.NewBroadcaster(record.WithContext(ctx), record.WithCorrelatorOptions(record.CorrelatorOptions{LRUCacheSize: lbcontroller.EventCacheEntries}))
	bc.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	var rec record.EventRecorder = bc.NewRecorder(scheme.Scheme, v1.EventSource{Component: eventComponent})
	c.recorder.Store(&rec)
	go func() {
		<-ctx.Done()
		bc.Shutdown()
	}()
	c.startPowerSource(ctx, clientBuilder)
	c.replica.Lead(ctx, servicePatcher{client}.PatchAnnotation)
	if len(c.state.Load().cfg.LoadBalancer.Pools) > 0 {
		go c.runStatusWriter(ctx, client)
	}
	go c.runOutOfService(ctx, client)
	go c.runFencing(ctx, client)
	go c.runCSRApproval(ctx, client)
}

// eventf records an Event on a Node or a Service when the recorder is running.
func (c *Cloud) eventf(obj runtime.Object, eventType, reason, format string, args ...any) {
	if rec := c.recorder.Load(); rec != nil {
		(*rec).Eventf(obj, eventType, reason, format, args...)
	}
}

// Instances is the legacy interface; InstancesV2 replaces it.
func (c *Cloud) Instances() (cloudprovider.Instances, bool) { return nil, false }

// InstancesV2 matches nodes to machines.
func (c *Cloud) InstancesV2() (cloudprovider.InstancesV2, bool) { return c, true }

// Zones is replaced by InstancesV2.
func (c *Cloud) Zones() (cloudprovider.Zones, bool) { return nil, false }

// Clusters is not offered.
func (c *Cloud) Clusters() (cloudprovider.Clusters, bool) { return nil, false }

// ProviderName returns "metal".
func (c *Cloud) ProviderName() string { return ProviderName }

// HasClusterID is true: one config serves one cluster, so there is nothing to tag.
func (c *Cloud) HasClusterID() bool { return true }
