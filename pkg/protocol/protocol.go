// Package protocol is the seam of the announcement protocols (BGP, L2 and
// the next): each supplies, for the protocol named in pools[].announce,
// what a replica runs, what a node agent runs, what the leader shows on the
// Services and the metrics of each. The replica runtime (pkg/metal), the
// node agent (pkg/agent) and the status writer loop over All; none of them
// names a protocol. A new protocol is a package that calls Register from
// init, imported by pkg/protocol/builtin.
package protocol

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/component-base/metrics"

	"github.com/metal-ccm/metal-ccm/pkg/announcer"
	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/l2/witness"
	"github.com/metal-ccm/metal-ccm/pkg/svcstatus"
)

// Errors a role's Ready returns.
var (
	// ErrStarting: the role has not announced what its caches show yet.
	ErrStarting = errors.New("starting: the announcer has not synced yet")
	// ErrPodRoutesMissing: with routes.enabled, some of the node's pod
	// CIDRs are not announced yet.
	ErrPodRoutesMissing = errors.New("pod routes not announced yet")
)

// Protocol is one announcement protocol.
type Protocol interface {
	// Name is the protocol as pools[].announce names it.
	Name() config.Protocol
	// Replica builds what every replica runs, or nil when cfg gives the
	// replicas nothing to do for the protocol. It adds its handlers to
	// env.Informers, which run after it returns.
	Replica(cfg *config.CloudConfig, env ReplicaEnv) (Replica, error)
	// Unknown is what the leader shows of an address of the protocol when
	// no replica role runs (a reload added its first pool): ok says whether
	// that is known to be the whole truth.
	Unknown(addr netip.Addr) (a svcstatus.Announcement, ok bool)
	// OnNodes reports whether cfg gives the node agents work for the
	// protocol (Agent then builds a role, for a node with an IPv4
	// InternalIP).
	OnNodes(cfg *config.CloudConfig) bool
	// Agent builds what the node agent of env.Node runs, or nil when cfg
	// gives the agents nothing to do for the protocol (OnNodes) or none for
	// this node.
	Agent(ctx context.Context, cfg *config.CloudConfig, env AgentEnv) (Agent, error)
	// ReplicaMetrics and AgentMetrics describe what the roles' Collect
	// sends (docs/metrics.md lists them).
	ReplicaMetrics() []*metrics.Desc
	AgentMetrics() []*metrics.Desc
	// OutputAnnotations are the Service annotations the leader writes for
	// people to read (the service controller ignores their changes).
	OutputAnnotations() []string
}

// ReplicaEnv is what the replica runtime gives a protocol.
type ReplicaEnv struct {
	// Informers of Services, Nodes and EndpointSlices, started after every
	// protocol's Replica has returned.
	Informers announcer.Informers
	Nodes     corelisters.NodeLister
	Services  corelisters.ServiceLister
	// Wants is whether this replica serves a Service (its class).
	Wants func(*v1.Service) bool
	// Addresses is whether the config of the moment announces an address
	// with the protocol (a reload's pools apply at once).
	Addresses func(netip.Addr) bool
	// InPools is whether the config of the moment has addr in some pool.
	InPools func(netip.Addr) bool
	// HealthChecks are the replica's checks of the nodes, nil when they
	// are off; called once, by a protocol that checks.
	HealthChecks func() *announcer.HealthChecks
	// PodRoutes is told the announcer of the pod routes, by the protocol
	// that announces them from the replicas (routes.enabled): the Routes
	// interface reads them there, and /metrics its health checks.
	PodRoutes func(*announcer.Announcer)
	// PodRoutesFromAgents is called by the protocol whose node agents
	// announce the pod routes: the Routes interface then follows the
	// agents' pods.
	PodRoutesFromAgents func()
}

// Replica is a protocol's part in every replica.
type Replica interface {
	// Start starts what must run before the informers (a BGP speaker) and
	// returns once it is started. What it starts may outlive ctx (BGP
	// sessions that routers keep): only Stop ends it.
	Start(ctx context.Context) error
	// Run runs until ctx ends, once the informers run.
	Run(ctx context.Context)
	// Stop ends what Start started, for a replica about to exit, as cfg
	// (the config in force now) says. othersRun tells, taking up to a few
	// seconds, whether another replica is known to run.
	Stop(ctx context.Context, cfg *config.CloudConfig, othersRun func() bool)
	// Lead runs, on the leader only, what it alone writes, until ctx
	// ends; it may return at once.
	Lead(ctx context.Context, env LeaderEnv)
	// Announcement is what the replica knows of addr's announcement, with
	// nodes naming the nodes by address; ok is false while it does not
	// know yet.
	Announcement(addr netip.Addr, nodes map[netip.Addr]string) (a svcstatus.Announcement, ok bool)
	// Changed signals that an Announcement may have changed.
	Changed() <-chan struct{}
	// OutsidePools is how many addresses of the Services' status the role
	// leaves out: in no pool of the protocol.
	OutsidePools() int
	// Resync looks at every Service again (a reload changed the pools).
	Resync()
	// Collect sends the role's metrics (ReplicaMetrics).
	Collect(ch chan<- metrics.Metric)
}

// LeaderEnv is what the leader gives a replica role's Lead. It holds no
// API client, so that the node agent, which links this package, links
// none of client-go's typed clients.
type LeaderEnv struct {
	// PatchAnnotation sets one annotation of a Service, through its
	// status subresource (the replicas may write services/status only).
	PatchAnnotation func(ctx context.Context, svc *v1.Service, key, value string) error
	// Event records an Event while the leader's recorder runs.
	Event func(obj runtime.Object, eventType, reason, format string, args ...any)
	// Config is the config in force.
	Config func() *config.CloudConfig
}

// AgentEnv is what the node agent gives a protocol.
type AgentEnv struct {
	// Node is the agent's Node, with an InternalIP
	// (nodes.PrimaryInternalIP).
	Node *v1.Node
	// Informers of Services, Nodes and EndpointSlices, started after every
	// protocol's Agent has returned.
	Informers announcer.Informers
	// Wants is whether the agents serve a Service (its class).
	Wants func(*v1.Service) bool
	// ViewStale reports whether the informers' view has been cut off from
	// the API server for longer than the agent allows (agent.StaleAfter):
	// a protocol whose agents decide from their own views (L2) stops
	// taking addresses on it.
	ViewStale func() bool
	// L2Witness is the two-node witness of the L2 agents, nil when none
	// is configured; L2 runs it.
	L2Witness *witness.Witness
	// Addresses is whether the config of the moment announces an address
	// with a protocol, and InPools whether it has it in some pool: the
	// pools an agent takes without a restart (config.AgentsApplyLive).
	Addresses func(config.Protocol) func(netip.Addr) bool
	InPools   func(netip.Addr) bool
}

// Agent is a protocol's part in a node agent.
type Agent interface {
	// Run announces until ctx ends.
	Run(ctx context.Context)
	// Ready is nil once the role announces what it should (/readyz).
	Ready() error
	// OutsidePools is as Replica's.
	OutsidePools() int
	// Collect sends the role's metrics (AgentMetrics).
	Collect(ch chan<- metrics.Metric)
	// Resync makes the role look at every Service again: the pools
	// changed (AgentEnv.Addresses).
	Resync()
	// Stop ends what the role keeps beyond Run's ctx, once Run has
	// returned and the process is about to exit: leave is true when the
	// node stops serving (tell the peers now), false when the same node's
	// agent is being replaced (let the peers keep its announcements until
	// the next one is back).
	Stop(ctx context.Context, leave bool)
}

var (
	mu        sync.Mutex
	protocols []Protocol
)

// Register adds a protocol; a package's init calls it.
func Register(p Protocol) {
	mu.Lock()
	defer mu.Unlock()
	if slices.ContainsFunc(protocols, func(q Protocol) bool { return q.Name() == p.Name() }) {
		panic("protocol " + string(p.Name()) + " registered twice")
	}
	protocols = append(protocols, p)
	// In name order, whatever the order of the packages' init: the order
	// roles start and Services' summaries list them.
	slices.SortFunc(protocols, func(a, b Protocol) int { return strings.Compare(string(a.Name()), string(b.Name())) })
}

// All are the registered protocols, in name order.
func All() []Protocol {
	mu.Lock()
	defer mu.Unlock()
	return slices.Clone(protocols)
}
