package framework

import (
	"context"
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/metal-ccm/metal-ccm/pkg/annotation"
	"github.com/metal-ccm/metal-ccm/pkg/outofservice"
)

// PowerTaints are the taints that say a node's machine is off: the
// out-of-service taint (the CCM's, or an operator's) and upstream's
// shutdown taint (the provider's InstanceShutdown).
var PowerTaints = []string{outofservice.TaintKey, cloudproviderapi.TaintNodeShutdown}

// powerTaintsOf are the PowerTaints node n has.
func powerTaintsOf(n *v1.Node) []string {
	var out []string
	for _, t := range n.Spec.Taints {
		if slices.Contains(PowerTaints, t.Key) {
			out = append(out, t.Key)
		}
	}
	return out
}

// PowerOffFigures are what followed a machine's power-off, each counted
// from it (zero: not seen).
type PowerOffFigures struct {
	// NotReady: the node's Ready condition no longer True; Tainted: the
	// node has the out-of-service taint; Moved: the pod runs, Ready, on
	// MovedTo.
	NotReady, Tainted, Moved time.Duration
	MovedTo                  string
	// WrongTaints are the PowerTaints seen on the nodes that stayed on, as
	// "node: key", each once.
	WrongTaints []string
}

// WatchPowerOff follows node's power-off at off, polling every 500 ms,
// until pod of namespace ns runs Ready on another node or timeout has passed
// since off: when the node turned NotReady, when it got the out-of-service
// taint, when the pod ran elsewhere, and any PowerTaint on another node.
func WatchPowerOff(ctx context.Context, cs kubernetes.Interface, ns, pod, node string, off time.Time, timeout time.Duration) (PowerOffFigures, error) {
	var f PowerOffFigures
	deadline := off.Add(timeout)
	for {
		f.WrongTaints = appendWrongTaints(ctx, cs, f.WrongTaints, node)
		n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		now := time.Since(off)
		if err == nil {
			if f.NotReady == 0 && !nodeIsReady(n) {
				f.NotReady = now
			}
			if f.Tainted == 0 && slices.Contains(powerTaintsOf(n), outofservice.TaintKey) {
				f.Tainted = now
			}
		}
		if on := RunningOn(ctx, cs, ns, pod); on != "" && on != node {
			f.Moved, f.MovedTo = time.Since(off), on
			return f, nil
		}
		if time.Now().After(deadline) {
			return f, fmt.Errorf("pod %s/%s not Running on a node other than %s within %s (NotReady after %s, out-of-service after %s)",
				ns, pod, node, timeout, f.NotReady.Round(100*time.Millisecond), f.Tainted.Round(100*time.Millisecond))
		}
		select {
		case <-ctx.Done():
			return f, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// WatchNoPowerTaints polls every 500 ms for window and returns the
// PowerTaints seen on any node but except ("" for none), each once, as
// "node: key".
func WatchNoPowerTaints(ctx context.Context, cs kubernetes.Interface, except string, window time.Duration) []string {
	var seen []string
	end := time.Now().Add(window)
	for time.Now().Before(end) && ctx.Err() == nil {
		seen = appendWrongTaints(ctx, cs, seen, except)
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
	return seen
}

// appendWrongTaints adds to seen the PowerTaints of every node but except
// not yet in it.
func appendWrongTaints(ctx context.Context, cs kubernetes.Interface, seen []string, except string) []string {
	l, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return seen
	}
	for i := range l.Items {
		n := &l.Items[i]
		if n.Name == except {
			continue
		}
		for _, k := range powerTaintsOf(n) {
			if s := n.Name + ": " + k; !slices.Contains(seen, s) {
				seen = append(seen, s)
			}
		}
	}
	return seen
}

// WaitPowerBack follows node's power-on at on until it is Ready and has no
// PowerTaint (the CCM removes its out-of-service taint and mark, upstream
// its shutdown taint, once the node is Ready), and returns how long each
// took.
func WaitPowerBack(ctx context.Context, cs kubernetes.Interface, node string, on time.Time, timeout time.Duration) (ready, untainted time.Duration, err error) {
	deadline := on.Add(timeout)
	for {
		n, gerr := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if gerr == nil {
			if ready == 0 && nodeIsReady(n) {
				ready = time.Since(on)
			}
			if _, marked := n.Annotations[annotation.OutOfService]; ready > 0 && !marked && len(powerTaintsOf(n)) == 0 {
				return ready, time.Since(on), nil
			}
		}
		if time.Now().After(deadline) {
			return ready, 0, fmt.Errorf("node %s not Ready without power taints within %s of the power-on (Ready after %s)",
				node, timeout, ready.Round(100*time.Millisecond))
		}
		select {
		case <-ctx.Done():
			return ready, 0, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func nodeIsReady(n *v1.Node) bool {
	return slices.ContainsFunc(n.Status.Conditions, func(c v1.NodeCondition) bool {
		return c.Type == v1.NodeReady && c.Status == v1.ConditionTrue
	})
}
