package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/nodes"
)

// stopLookup bounds what a stopping agent reads to decide how it stops:
// within the pod's grace period, and short, since the node may be going.
const stopLookup = 3 * time.Second

// Stop says how an agent's sessions end.
type Stop struct {
	// Leave: the node stops serving (drained, being deleted, the agent
	// removed from it), and the routers are told now (BGP's Cease
	// NOTIFICATION). Else the same node's agent is being replaced (a
	// rolling update, a restart) and the routers keep its paths (graceful
	// restart) until the next one is back.
	Leave bool
	// Why says which, for the log.
	Why string
}

// serving are the rules of a node that stays: one failing says the node
// stops serving, so its agent's sessions end with a Cease. The first that
// fails is named.
var serving = []nodes.Named{
	{Pred: nodes.NotDeleting, Fails: "the node is being deleted"},
	{Pred: nodes.NotToBeDeleted, Fails: "the node has the " + nodes.ToBeDeletedTaint + " taint"},
	{Pred: schedulable, Fails: "the node is cordoned (unschedulable: drained)"},
	{Pred: notTainted(v1.TaintNodeOutOfService), Fails: "the node is out of service (" + v1.TaintNodeOutOfService + ")"},
	{Pred: notTainted(nodes.ShutdownTaint), Fails: "the node's machine is shut down (" + nodes.ShutdownTaint + ")"},
	{Pred: nodes.Included, Fails: "the node is excluded from load balancers (" + nodes.ExcludeLabel + ")"},
}

func schedulable(n *v1.Node) bool { return !n.Spec.Unschedulable }

func notTainted(key string) nodes.Predicate {
	return func(n *v1.Node) bool {
		return !slices.ContainsFunc(n.Spec.Taints, func(t v1.Taint) bool { return t.Key == key })
	}
}

// daemonSet is what the agent reads of its DaemonSet: whether it is being
// deleted, and which nodes its pods go to.
type daemonSet struct {
	Metadata metav1.ObjectMeta `json:"metadata"`
	Spec     struct {
		Template v1.PodTemplateSpec `json:"template"`
	} `json:"spec"`
}

// decideStop is the rule of an agent's stop, from its node (nil: gone) and
// its DaemonSet (nil: gone; dsKnown false: the agent was not told its
// DaemonSet, and only the node decides).
func decideStop(node *v1.Node, ds *daemonSet, dsKnown bool) Stop {
	if node == nil {
		return Stop{Leave: true, Why: "the node is gone"}
	}
	for _, r := range serving {
		if !r.Pred(node) {
			return Stop{Leave: true, Why: r.Fails}
		}
	}
	if !dsKnown {
		return Stop{Why: "the node still serves (no --daemonset given: a restart is assumed)"}
	}
	switch {
	case ds == nil:
		return Stop{Leave: true, Why: "the agent's DaemonSet is gone"}
	case !ds.Metadata.DeletionTimestamp.IsZero():
		return Stop{Leave: true, Why: "the agent's DaemonSet is being deleted"}
	}
	pod := &v1.Pod{Spec: ds.Spec.Template.Spec}
	if match, err := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); err != nil || !match {
		return Stop{Leave: true, Why: "the agent's DaemonSet no longer selects this node"}
	}
	return Stop{Why: "the node still serves and its DaemonSet runs an agent on it (a rolling update or a restart)"}
}

// stopping decides how the agent stops: a config change restarts the same
// agent; else decideStop over the node and the DaemonSet read now. Where
// they cannot be read, the agent stops as if it were restarting (as a
// crash would): the routers' graceful restart, bounded by the hold time.
func (a *Agent) stopping(ctx context.Context) Stop {
	if errors.Is(context.Cause(ctx), config.ErrRestart) {
		return Stop{Why: "the config changed: the same agent starts again"}
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopLookup)
	defer cancel()
	var node *v1.Node
	n := &v1.Node{}
	switch err := a.Client.Nodes.Get(rctx, a.NodeName, n); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return Stop{Why: fmt.Sprintf("cannot read the node (%v): stopping as a restart", err)}
	default:
		node = n
	}
	if a.DaemonSet.Name == "" {
		return decideStop(node, nil, false)
	}
	ds, err := a.Client.daemonSet(rctx, a.DaemonSet)
	if err != nil {
		return Stop{Why: fmt.Sprintf("cannot read the DaemonSet %s (%v): stopping as a restart", a.DaemonSet, err)}
	}
	return decideStop(node, ds, true)
}

// daemonSet reads the DaemonSet ref as JSON into the few fields the stop
// rule needs (no typed client of apps/v1 in the agent); nil when it does
// not exist.
func (c *Client) daemonSet(ctx context.Context, ref types.NamespacedName) (*daemonSet, error) {
	raw, err := c.apps.Get().AbsPath("/apis/apps/v1/namespaces", ref.Namespace, "daemonsets", ref.Name).
		SetHeader("Accept", "application/json").Do(ctx).Raw()
	if apierrors.IsNotFound(err) {
		return nil, nil //nolint:nilnil // gone is an answer
	}
	if err != nil {
		return nil, err
	}
	ds := &daemonSet{}
	if err := json.Unmarshal(raw, ds); err != nil {
		return nil, fmt.Errorf("daemonset %s: %w", ref, err)
	}
	return ds, nil
}

// logStop says how the agent stops.
func logStop(ctx context.Context, s Stop) {
	logger := klog.FromContext(ctx)
	if s.Leave {
		logger.Info("Stopping for good: this node's announcements end now (BGP: a Cease NOTIFICATION)", "reason", s.Why)
		return
	}
	logger.Info("Stopping to be replaced: peers keep this node's announcements until its next agent is back (BGP: graceful restart)", "reason", s.Why)
}
