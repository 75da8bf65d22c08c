// Package outofservice marks NotReady nodes whose machines are confirmed
// off with the node.kubernetes.io/out-of-service taint (Kubernetes' non-graceful
// node shutdown): Kubernetes then deletes their pods and detaches their
// volumes at once, so that a StatefulSet's pod on a dead machine runs again
// elsewhere without a person vouching that the machine is off. The evidence
// is the power-state source's: only its Off, said for a confirmation time,
// ever taints; no answer never does. A node is untainted when it is Ready
// again, and only if this controller tainted it.
//
// With the fast path, a node whose kube-proxy no longer answers the
// leader's check is asked about at once, before the node lifecycle
// controller marks it NotReady, and the Terminating pods of a node this
// controller tainted are force-deleted while its source says Off.
package outofservice

import (
	"context"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	nodehelpers "k8s.io/cloud-provider/node/helpers"
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/annotation"
	"github.com/metal-ccm/metal-ccm/pkg/healthcheck"
	"github.com/metal-ccm/metal-ccm/pkg/nodes"
)

// The taint, as Kubernetes' non-graceful node shutdown documents it.
const (
	TaintKey   = "node.kubernetes.io/out-of-service"
	TaintValue = "nodeshutdown"
)

// Event reasons on nodes. They are stable: alerts may match them.
const (
	// ReasonTainted: the node got the out-of-service taint.
	ReasonTainted = "OutOfServiceTainted"
	// ReasonUntainted: the node is Ready again and lost the taint.
	ReasonUntainted = "OutOfServiceRemoved"
	// ReasonPodsDeleted: the Terminating pods of a node this controller
	// tainted were force-deleted (outOfService.deletePods).
	ReasonPodsDeleted = "OutOfServicePodsDeleted"
)

// Settings are the controller's settings of the moment.
type Settings struct {
	Enabled    bool
	ConfirmFor time.Duration
	Source     string // for the Events
	// FastPath: nodes whose kube-proxy check fails are asked about at
	// once.
	FastPath bool
	// DeletePods: the Terminating pods of the nodes this controller
	// tainted are force-deleted while their source says Off.
	DeletePods bool
	// Checks and ProxyPort are the fast path's checks (the health
	// checks' settings).
	Checks    healthcheck.Options
	ProxyPort uint16
}

// Prober checks the nodes' kube-proxy for the fast path (Probes).
type Prober interface {
	// Update sets the checks of s for the nodes; ctx bounds them.
	Update(ctx context.Context, s Settings, nodes []*v1.Node)
	// State is a node's check, Unknown when it is not checked.
	State(name string) healthcheck.State
	// Stop ends the checks.
	Stop()
}

// Controller taints and untaints nodes; only the leader runs it.
type Controller struct {
	Nodes  corelisters.NodeLister
	Client kubernetes.Interface
	// Off is the power-state evidence of a node's machine: true only when
	// the source says Off.
	Off func(ctx context.Context, node *v1.Node) (bool, error)
	// Settings are read every round (a reload applies at once).
	Settings func() Settings
	// Event records an Event on a node.
	Event func(node *v1.Node, eventType, reason, format string, args ...any)
	// Period is how often the nodes are looked at.
	Period time.Duration
	// Probes are the fast path's checks; nil: none (the fast path then
	// finds no node whose check fails).
	Probes Prober

	now      func() time.Time
	offSince map[string]time.Time // candidates whose machine is off, since when
	wake     chan struct{}        // wakes Run (wakeCh)
	wakeOnce sync.Once
}

var taint = &v1.Taint{Key: TaintKey, Value: TaintValue, Effect: v1.TaintEffectNoExecute}

// afterTaint are when, after a taint, the nodes are looked at again for
// their pods to delete (DeletePods), instead of a Period later.
var afterTaint = []time.Duration{300 * time.Millisecond, time.Second}

// Run looks at the nodes every Period, and when Poke is called, until ctx
// ends.
func (c *Controller) Run(ctx context.Context) {
	c.init()
	if c.Probes != nil {
		defer c.Probes.Stop()
	}
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

func (c *Controller) init() {
	if c.now == nil {
		c.now = time.Now
	}
	if c.offSince == nil {
		c.offSince = map[string]time.Time{}
	}
}

// NodeChanged is the node informer's update: a node whose Ready
// condition changed is looked at at once, not up to a Period later (a
// NotReady node is a candidate; a Ready one may lose its taint).
func (c *Controller) NodeChanged(old, cur *v1.Node) {
	if nodes.Ready(old) != nodes.Ready(cur) {
		c.Poke()
	}
}

// Poke makes Run look at the nodes at once: a check changed, or a
// confirmation is due.
func (c *Controller) Poke() {
	select {
	case c.wakeCh() <- struct{}{}:
	default:
	}
}

// wakeCh is the channel that wakes Run, made on first use: Poke is called
// from the informer's and the probes' goroutines, perhaps before Run.
func (c *Controller) wakeCh() chan struct{} {
	c.wakeOnce.Do(func() { c.wake = make(chan struct{}, 1) })
	return c.wake
}

// Sync looks at every node once.
func (c *Controller) Sync(ctx context.Context) {
	c.init()
	logger := klog.FromContext(ctx).WithName("out-of-service")
	list, err := c.Nodes.List(labels.Everything())
	if err != nil {
		return
	}
	s := c.Settings()
	if c.Probes != nil {
		c.Probes.Update(ctx, s, list)
	}
	seen := make(map[string]bool, len(list))
	for _, n := range list {
		seen[n.Name] = true
		v := viewOf(n, c.probe(n.Name))
		st, why := decide(v, s)
		if st != stepAsk {
			// No candidate: a confirmation starts again.
			delete(c.offSince, n.Name)
		}
		switch st {
		case stepUntaint:
			if err := c.untaint(ctx, n); err != nil {
				logger.Error(err, "Cannot remove the out-of-service taint", "node", klog.KObj(n))
			}
		case stepKeep:
			if forceDelete(v, s) {
				c.forceDelete(ctx, n, s)
			}
		case stepAsk:
			c.confirm(ctx, n, s, why)
		}
	}
	for name := range c.offSince {
		if !seen[name] {
			delete(c.offSince, name)
		}
	}
}

func (c *Controller) probe(name string) healthcheck.State {
	if c.Probes == nil {
		return healthcheck.Unknown
	}
	return c.Probes.State(name)
}

// confirm asks the source about a candidate and taints it once the source
// has said Off at every look for ConfirmFor.
func (c *Controller) confirm(ctx context.Context, n *v1.Node, s Settings, why cause) {
	off, err := c.Off(ctx, n)
	if err != nil || !off {
		// No evidence: the confirmation starts again.
		delete(c.offSince, n.Name)
		return
	}
	since, ok := c.offSince[n.Name]
	if !ok {
		c.offSince[n.Name] = c.now()
		// Looked at again when the confirmation is due, not up to a
		// Period later.
		time.AfterFunc(s.ConfirmFor, c.Poke)
		return
	}
	if c.now().Sub(since) < s.ConfirmFor {
		return
	}
	if err := c.taint(ctx, n); err != nil {
		klog.FromContext(ctx).WithName("out-of-service").Error(err, "Cannot add the out-of-service taint", "node", klog.KObj(n))
		return
	}
	delete(c.offSince, n.Name)
	if s.DeletePods {
		// Kubernetes' taint eviction now marks the pods Terminating; the
		// next rounds delete them as soon as it has.
		for _, d := range afterTaint {
			time.AfterFunc(d, c.Poke)
		}
	}
	c.Event(n, v1.EventTypeWarning, ReasonTainted,
		"Power-state source %s has said the machine is off since %s (confirmed for %s) and %s: tainted %s=%s:NoExecute, so its pods are deleted and their volumes detached",
		s.Source, since.UTC().Format(time.RFC3339), s.ConfirmFor, why, TaintKey, TaintValue)
}

// forceDelete force-deletes the Terminating pods of a node this
// controller tainted, while its source says Off: the machine cannot be
// running them.
func (c *Controller) forceDelete(ctx context.Context, n *v1.Node, s Settings) {
	off, err := c.Off(ctx, n)
	if err != nil || !off {
		return
	}
	deleted, err := c.deleteTerminating(ctx, n)
	if len(deleted) > 0 {
		c.Event(n, v1.EventTypeWarning, ReasonPodsDeleted,
			"Power-state source %s says the machine is off and the node is tainted %s: force-deleted its Terminating pods %s",
			s.Source, TaintKey, strings.Join(deleted, ", "))
	}
	if err != nil {
		klog.FromContext(ctx).WithName("out-of-service").Error(err, "Cannot force-delete the pods of an out-of-service node", "node", klog.KObj(n))
	}
}

// taint marks the node first, then taints it: a mark without the taint
// (a failed second write) only makes the untaint a no-op.
func (c *Controller) taint(ctx context.Context, n *v1.Node) error {
	if err := c.mark(ctx, n, c.now().UTC().Format(time.RFC3339)); err != nil {
		return err
	}
	return nodehelpers.AddOrUpdateTaintOnNode(c.Client, n.Name, taint)
}

func (c *Controller) untaint(ctx context.Context, n *v1.Node) error {
	if err := nodehelpers.RemoveTaintOffNode(c.Client, n.Name, n, taint); err != nil {
		return err
	}
	if err := c.mark(ctx, n, ""); err != nil {
		return err
	}
	c.Event(n, v1.EventTypeNormal, ReasonUntainted, "The node is Ready again: removed the %s taint this controller added", TaintKey)
	return nil
}

// mark sets (value) or removes ("") the node's mark.
func (c *Controller) mark(ctx context.Context, n *v1.Node, value string) error {
	return nodes.SetMark(ctx, c.Client.CoreV1().Nodes(), n.Name, annotation.OutOfService, value)
}

func hasTaint(n *v1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == TaintKey {
			return true
		}
	}
	return false
}
