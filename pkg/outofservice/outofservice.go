// Package outofservice marks NotReady nodes whose machines are confirmed
// off with the node.kubernetes.io/out-of-service taint (Kubernetes' non-graceful
// node shutdown): Kubernetes then deletes their pods and detaches their
// volumes at once, so that a StatefulSet's pod on a dead machine runs again
// elsewhere without a person vouching that the machine is off. The evidence
// is the power-state source's: only its Off, said for a confirmation time,
// ever taints; no answer never does. A node is untainted when it is Ready
// again, and only if this controller tainted it.
package outofservice

import (
	"context"
	"encoding/json"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	nodehelpers "k8s.io/cloud-provider/node/helpers"
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/annotation"
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
)

// Settings are the controller's settings of the moment.
type Settings struct {
	Enabled    bool
	ConfirmFor time.Duration
	Source     string // for the Events
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

	now      func() time.Time
	offSince map[string]time.Time // NotReady nodes whose machine is off, since when
}

var taint = &v1.Taint{Key: TaintKey, Value: TaintValue, Effect: v1.TaintEffectNoExecute}

// Run looks at the nodes every Period until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	if c.now == nil {
		c.now = time.Now
	}
	c.offSince = map[string]time.Time{}
	t := time.NewTicker(c.Period)
	defer t.Stop()
	for {
		c.Sync(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Sync looks at every node once.
func (c *Controller) Sync(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName("out-of-service")
	list, err := c.Nodes.List(labels.Everything())
	if err != nil {
		return
	}
	s := c.Settings()
	seen := make(map[string]bool, len(list))
	for _, n := range list {
		seen[n.Name] = true
		_, marked := n.Annotations[annotation.OutOfService]
		if nodes.Ready(n) {
			delete(c.offSince, n.Name)
			if marked {
				if err := c.untaint(ctx, n); err != nil {
					logger.Error(err, "Cannot remove the out-of-service taint", "node", klog.KObj(n))
				}
			}
			continue
		}
		if !s.Enabled || marked || hasTaint(n) {
			continue
		}
		off, err := c.Off(ctx, n)
		if err != nil || !off {
			// No evidence: the confirmation starts again.
			delete(c.offSince, n.Name)
			continue
		}
		since, ok := c.offSince[n.Name]
		if !ok {
			c.offSince[n.Name] = c.now()
			continue
		}
		if c.now().Sub(since) < s.ConfirmFor {
			continue
		}
		if err := c.taint(ctx, n); err != nil {
			logger.Error(err, "Cannot add the out-of-service taint", "node", klog.KObj(n))
			continue
		}
		c.Event(n, v1.EventTypeWarning, ReasonTainted,
			"Power-state source %s has said the machine is off since %s (confirmed for %s) and the node is NotReady: tainted %s=%s:NoExecute, so its pods are deleted and their volumes detached",
			s.Source, since.UTC().Format(time.RFC3339), s.ConfirmFor, TaintKey, TaintValue)
	}
	for name := range c.offSince {
		if !seen[name] {
			delete(c.offSince, name)
		}
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
	if err := c.mark(ctx, n, nil); err != nil {
		return err
	}
	c.Event(n, v1.EventTypeNormal, ReasonUntainted, "The node is Ready again: removed the %s taint this controller added", TaintKey)
	return nil
}

// mark sets (value a string) or removes (nil) the node's marker annotation.
func (c *Controller) mark(ctx context.Context, n *v1.Node, value any) error {
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{annotation.OutOfService: value}}})
	if err != nil {
		return err
	}
	_, err = c.Client.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, body, metav1.PatchOptions{})
	return err
}

func hasTaint(n *v1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == TaintKey {
			return true
		}
	}
	return false
}
