package metal

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/announcer"
	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/l2/elect"
	"github.com/metal-ccm/metal-ccm/pkg/l2/member"
	"github.com/metal-ccm/metal-ccm/pkg/nodes"
)

// l2Recheck bounds how long a change the observer was not told of (a
// node's Ready condition) waits to be seen.
const l2Recheck = time.Second

// l2JoinEvery bounds how often the observer dials the agents it does not
// see.
const l2JoinEvery = 5 * time.Second

// l2Observer knows which node answers for each L2 address, so that users
// can see it on the Service: it joins the node agents' membership as an
// observer (it is never counted nor chosen) and applies to its own view the
// rule every agent applies to its own (elect.Choose). It runs in every
// replica, so that a new leader knows at once; only the leader writes
// (l2StatusWriter). The agents report nothing: they need no write access.
type l2Observer struct {
	cfg      *config.L2
	members  *member.Members // set by start
	lastJoin time.Time
	joining  atomic.Bool // a Join runs
	nodes    corelisters.NodeLister
	selects  func(labels.Set) bool

	candidates *elect.Candidates // the announcer's Backend
	mu         sync.Mutex
	owners     map[netip.Addr]string // address -> node name; set while the view has a majority
	known      bool                  // owners was computed from a majority view at least once
	changed    chan struct{}         // to the writer, coalescing
	// statusChanged: the same, to the Service status writer.
	statusChanged chan struct{}
}

// newL2Observer is the observer of the agents' membership; run joins it.
func newL2Observer(cfg *config.CloudConfig, nodes corelisters.NodeLister) *l2Observer {
	return &l2Observer{cfg: &cfg.L2, nodes: nodes, selects: cfg.L2.Selects, candidates: elect.NewCandidates(),
		changed: make(chan struct{}, 1), statusChanged: make(chan struct{}, 1)}
}

// start joins the membership of the agents, which they keep at the nodes'
// addresses (port l2.memberlistPort), from the address this replica
// reaches them with, on a port of its own (the agent of its own node has
// that port).
func (o *l2Observer) start(ctx context.Context) error {
	key, err := member.ReadKey(o.cfg.SecretFile)
	if err != nil {
		return err
	}
	bind, err := o.localAddress(ctx)
	if err != nil {
		return err
	}
	o.members, err = member.Start(ctx, member.Config{Name: observerName(), Bind: netip.AddrPortFrom(bind, 0), SecretKey: key,
		Observer: true, Timing: member.DefaultTiming()})
	if err != nil {
		return fmt.Errorf("L2 membership: %w", err)
	}
	return nil
}

// join dials the expected agents the observer does not see, at most
// every l2JoinEvery, in the background (a dial to a node that is down
// waits for the TCP timeout; the view must follow the agents meanwhile).
func (o *l2Observer) join(list []*v1.Node, alive []member.Member) {
	if time.Since(o.lastJoin) < l2JoinEvery || o.joining.Load() {
		return
	}
	if seeds := elect.Seeds(list, alive, o.selects, o.cfg.MemberlistPort, nil); len(seeds) > 0 {
		o.lastJoin = time.Now()
		o.joining.Store(true)
		go func() {
			defer o.joining.Store(false)
			_ = o.members.Join(seeds) // agents down or not started: the next round retries
		}()
	}
}

// localAddress is this replica's source address toward the first node with
// an IPv4 InternalIP, waiting for one to be listed.
func (o *l2Observer) localAddress(ctx context.Context) (netip.Addr, error) {
	for {
		list, _ := o.nodes.List(labels.Everything())
		for _, n := range list {
			if ip, ok := nodes.InternalIP(n, true); ok {
				return nodes.SourceToward(netip.AddrPortFrom(ip, 9))
			}
		}
		select {
		case <-ctx.Done():
			return netip.Addr{}, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// run joins, then recomputes the owners on every change until ctx ends,
// then leaves.
func (o *l2Observer) run(ctx context.Context, synced func() bool) {
	if err := o.start(ctx); err != nil {
		l2Logger(ctx).Error(err, "Cannot observe the L2 agents: Services will not show which node answers")
		return
	}
	tick := time.NewTicker(l2Recheck)
	defer tick.Stop()
	for {
		if synced() {
			o.sync()
		}
		select {
		case <-ctx.Done():
			_ = o.members.Leave(time.Second)
			o.members.Shutdown()
			return
		case <-o.candidates.Changed():
		case <-o.members.Changed():
		case <-tick.C:
		}
	}
}

func (o *l2Observer) sync() {
	list, err := o.nodes.List(labels.Everything())
	if err != nil {
		return
	}
	alive := o.members.Alive()
	o.join(list, alive)
	byAddr := map[netip.Addr]string{}
	for _, m := range alive {
		for _, a := range m.Addresses {
			byAddr[a.Unmap()] = m.Name
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	c := elect.Choose(elect.View{Candidates: o.candidates.Snapshot(), Alive: alive, Expected: elect.ExpectedAgents(list, o.selects)})
	if !c.Quorum {
		// This replica sees a minority: what it would show may be wrong,
		// so the last majority view stands.
		return
	}
	owners := make(map[netip.Addr]string, len(c.Owners))
	for p, hop := range c.Owners {
		owners[p.Addr()] = byAddr[hop]
	}
	if o.known && mapsEqual(owners, o.owners) {
		return
	}
	o.owners, o.known = owners, true
	for _, ch := range []chan struct{}{o.changed, o.statusChanged} {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Owner is the node that answers for addr ("" for none); ok is false until
// the observer has seen a majority of the agents.
func (o *l2Observer) Owner(addr netip.Addr) (node string, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.owners[addr.Unmap()], o.known
}

func mapsEqual(a, b map[netip.Addr]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// logger for the observer's messages.
func l2Logger(ctx context.Context) klog.Logger { return klog.FromContext(ctx).WithName("l2") }

// observeL2 builds the announcer of every L2 address's eligible nodes over
// inf (before inf runs) and returns what runs it and the observer until ctx
// ends.
func (c *Cloud) observeL2(cfg *config.CloudConfig, inf announcer.Informers, services corelisters.ServiceLister, nodes corelisters.NodeLister) func(context.Context) {
	o := newL2Observer(cfg, nodes)
	ann := announcer.New(inf, o.candidates, c.wantsLoadBalancer,
		announcer.Options{MaxNextHops: announcer.MaxNextHops, Addresses: cfg.LoadBalancer.Announcer(config.ProtocolL2)})
	c.l2.Store(&l2State{observer: o, services: services})
	return func(ctx context.Context) {
		go ann.Run(ctx)
		o.run(ctx, ann.Synced)
	}
}

// l2State is what the leader's writer needs, set once the observer runs.
type l2State struct {
	observer *l2Observer
	services corelisters.ServiceLister
}

// observerName names this replica in the membership: unique per process.
func observerName() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("metal-ccm-%s-%d", host, os.Getpid())
}

// servicePatcher patches Services' metadata with a client, through the
// status subresource (which takes metadata too): the replicas may patch
// services/status only, never the Services themselves.
type servicePatcher struct{ client kubernetes.Interface }

func (p servicePatcher) PatchAnnotation(ctx context.Context, svc *v1.Service, key, value string) error {
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: value}}})
	if err != nil {
		return err
	}
	_, err = p.client.CoreV1().Services(svc.Namespace).Patch(ctx, svc.Name, types.MergePatchType, body, metav1.PatchOptions{}, "status")
	return err
}
