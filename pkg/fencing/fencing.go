package fencing

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/annotation"
	"github.com/metal-ccm/metal-ccm/pkg/nodes"
)

// Event reasons on nodes. They are stable: alerts may match them.
const (
	// ReasonFenced: the node's machine was powered off through its BMC.
	ReasonFenced = "Fenced"
	// ReasonHeld: the node is due to be fenced, but as many fenced nodes
	// as the limit are not Ready again: it waits for one of them.
	ReasonHeld = "FencingHeld"
	// ReasonWouldFence: the node would have been fenced (dry run).
	ReasonWouldFence = "WouldFence"
	// ReasonFailed: the BMC did not take the power-off order.
	ReasonFailed = "FencingFailed"
)

// LeaseNamespace holds the nodes' heartbeat Leases, one per node, named as
// the node.
const LeaseNamespace = "kube-node-lease"

// Controller fences nodes; only the leader runs it, with the leader's
// context, which ends when the lease is lost.
type Controller struct {
	Nodes  corelisters.NodeLister
	Client kubernetes.Interface
	// Off is the power-state source's word on a node's machine: an error
	// when it cannot tell.
	Off func(ctx context.Context, node *v1.Node) (bool, error)
	// PowerOff powers a node's machine off through its BMC.
	PowerOff func(ctx context.Context, node *v1.Node) error
	// Settings are read every round (a reload applies at once).
	Settings func() Settings
	// Event records an Event on a node.
	Event func(node *v1.Node, eventType, reason, format string, args ...any)
	// Period is how often the nodes are looked at.
	Period time.Duration

	now      func() time.Time
	held     map[string]bool      // nodes told FencingHeld, during this hold
	wouldBe  map[string]bool      // nodes told WouldFence, until Ready again
	failedAt map[string]time.Time // nodes whose power-off failed, when
	fenced   map[string]bool      // nodes fenced, until Ready again (the mark may have failed)
	wake     chan struct{}        // wakes Run (wakeCh)
	wakeOnce sync.Once
}

// Run looks at the nodes every Period, and when a node's Ready condition
// changes (NodeChanged), until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	c.init()
	t := time.NewTicker(c.Period)
	defer t.Stop()
	for {
		c.Sync(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-c.wakeCh():
		}
	}
}

// NodeChanged makes Run look at the nodes at once when a node turned Ready
// or NotReady: a fenced node back is unmarked without waiting for the next
// period (the out-of-service taint, which looks at once too, then goes
// about when the mark does).
func (c *Controller) NodeChanged(old, cur *v1.Node) {
	if nodes.Ready(old) == nodes.Ready(cur) {
		return
	}
	select {
	case c.wakeCh() <- struct{}{}:
	default: // a look is pending
	}
}

// wakeCh is the channel that wakes Run, made on first use: NodeChanged is
// called from the informer's goroutine, perhaps before Run.
func (c *Controller) wakeCh() chan struct{} {
	c.wakeOnce.Do(func() { c.wake = make(chan struct{}, 1) })
	return c.wake
}

func (c *Controller) init() {
	if c.now == nil {
		c.now = time.Now
	}
	if c.held == nil {
		c.held, c.wouldBe, c.failedAt, c.fenced = map[string]bool{}, map[string]bool{}, map[string]time.Time{}, map[string]bool{}
	}
}

// Sync looks at every node once: it unmarks the fenced nodes that are
// Ready again, and fences the nodes due when fencing is not held.
func (c *Controller) Sync(ctx context.Context) {
	c.init()
	logger := klog.FromContext(ctx).WithName("fencing")
	list, err := c.Nodes.List(labels.Everything())
	if err != nil {
		return
	}
	s := c.Settings()
	// Disabled, a pass only unmarks (at 5,000 nodes every 2 s, no map
	// and no copy of the list).
	var byName map[string]*v1.Node
	var states []NodeState
	if s.Enabled {
		byName = make(map[string]*v1.Node, len(list))
		states = make([]NodeState, 0, len(list))
	}
	for _, n := range list {
		st := State(n)
		st.Fenced = st.Fenced || c.fenced[n.Name]
		if s.Enabled {
			byName[n.Name] = n
			states = append(states, st)
		}
		if !st.Ready {
			continue
		}
		delete(c.wouldBe, n.Name)
		delete(c.failedAt, n.Name)
		delete(c.fenced, n.Name)
		if st.Fenced {
			if err := c.mark(ctx, n, ""); err != nil {
				logger.Error(err, "Cannot remove the fencing mark", "node", klog.KObj(n))
			}
		}
	}
	if !s.Enabled {
		return
	}
	d := Decide(states, c.now(), s)
	room := d.Room()
	held := map[string]bool{}
	for _, due := range d.Due {
		if ctx.Err() != nil {
			return
		}
		if room > 0 {
			if c.fence(ctx, byName[due.Name], s) {
				room--
			}
			continue
		}
		if off, err := c.Off(ctx, byName[due.Name]); err != nil || off {
			continue // not fenced with room either
		}
		held[due.Name] = true
		if c.held[due.Name] {
			continue
		}
		count(resultHeld)
		c.Event(byName[due.Name], v1.EventTypeWarning, ReasonHeld,
			"NotReady since %s (more than %s), but %d fenced nodes are not Ready again, the limit (fencing.maxNodes %d, maxShare %d%% of %d nodes): fenced once one of them is Ready again",
			due.NotReadySince.UTC().Format(time.RFC3339), s.After, d.Fenced+d.Room()-room, s.MaxNodes, s.MaxShare, len(states))
	}
	c.held = held
}

// fence powers the node's machine off when its source says On, after
// reading the node and its Lease again from the API server. It reports
// whether the node takes a place under the limit: fenced, or it would be
// (dry run).
func (c *Controller) fence(ctx context.Context, n *v1.Node, s Settings) bool {
	logger := klog.FromContext(ctx).WithName("fencing").WithValues("node", klog.KObj(n))
	if at, failed := c.failedAt[n.Name]; failed && c.now().Sub(at) < s.After {
		return false
	}
	off, err := c.Off(ctx, n)
	if err != nil || off {
		// No answer: never fenced (the node has PowerStateUnknown). Off:
		// the out-of-service rule's.
		return false
	}
	since := State(n).NotReadySince
	if s.DryRun {
		if !c.wouldBe[n.Name] {
			c.wouldBe[n.Name] = true
			count(resultDryRun)
			c.Event(n, v1.EventTypeNormal, ReasonWouldFence,
				"Dry run: would power the machine off through power-state source %s: NotReady since %s (more than %s) while the source says On",
				s.Source, since.UTC().Format(time.RFC3339), s.After)
		}
		return true
	}
	// The cache may lag: the node and its heartbeat, from the API server.
	fresh, err := c.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
	if err != nil {
		logger.V(2).Info("Not fenced: cannot read the node", "err", err)
		return false
	}
	st := State(fresh)
	if st.Ready || st.Fenced || st.NotReadySince.IsZero() || c.now().Sub(st.NotReadySince) < s.After {
		logger.V(2).Info("Not fenced: the node changed", "ready", st.Ready, "fenced", st.Fenced)
		return false
	}
	lease, err := c.Client.CoordinationV1().Leases(LeaseNamespace).Get(ctx, n.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		logger.V(2).Info("Not fenced: cannot read the node's Lease", "err", err)
		return false
	case lease.Spec.RenewTime != nil && lease.Spec.RenewTime.After(st.NotReadySince):
		logger.Info("Not fenced: its kubelet renewed its Lease since the node went NotReady", "renewed", lease.Spec.RenewTime.UTC(), "notReadySince", st.NotReadySince.UTC())
		return false
	}
	if ctx.Err() != nil {
		// The leader lost its lease: another replica decides now.
		return false
	}
	if err := c.PowerOff(ctx, fresh); err != nil {
		c.failedAt[n.Name] = c.now()
		count(resultError)
		c.Event(fresh, v1.EventTypeWarning, ReasonFailed,
			"Cannot power the machine off through power-state source %s (NotReady since %s): %v; tried again after %s",
			s.Source, st.NotReadySince.UTC().Format(time.RFC3339), err, s.After)
		return false
	}
	count(resultFenced)
	c.fenced[n.Name] = true
	if err := c.mark(ctx, fresh, c.now().UTC().Format(time.RFC3339)); err != nil {
		logger.Error(err, "Fenced, but cannot mark the node")
	}
	c.Event(fresh, v1.EventTypeWarning, ReasonFenced,
		"Powered the machine off through power-state source %s: NotReady since %s (more than %s) while the source said On, and its BMC took the power-off order; the out-of-service rule applies once the source says Off",
		s.Source, st.NotReadySince.UTC().Format(time.RFC3339), s.After)
	return true
}

// mark sets (value) or removes ("") the node's mark.
func (c *Controller) mark(ctx context.Context, n *v1.Node, value string) error {
	return nodes.SetMark(ctx, c.Client.CoreV1().Nodes(), n.Name, annotation.Fenced, value)
}
