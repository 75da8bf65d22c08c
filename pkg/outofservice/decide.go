package outofservice

import (
	v1 "k8s.io/api/core/v1"

	"github.com/metal-ccm/metal-ccm/pkg/annotation"
	"github.com/metal-ccm/metal-ccm/pkg/healthcheck"
	"github.com/metal-ccm/metal-ccm/pkg/nodes"
)

// view is what the decision needs of a node.
type view struct {
	Ready bool
	// Marked: this controller tainted the node (its annotation).
	Marked bool
	// Tainted: the node has an out-of-service taint, anyone's.
	Tainted bool
	// Probe is the leader's check of the node's kube-proxy (Unknown when
	// the fast path is off or the node has no address to check).
	Probe healthcheck.State
}

func viewOf(n *v1.Node, probe healthcheck.State) view {
	_, marked := n.Annotations[annotation.OutOfService]
	return view{Ready: nodes.Ready(n), Marked: marked, Tainted: hasTaint(n), Probe: probe}
}

// step is what the controller does with a node in a round.
type step int

const (
	// stepNone: nothing; a confirmation under way starts again.
	stepNone step = iota
	// stepUntaint: the node is back; remove the taint this controller added.
	stepUntaint
	// stepKeep: the node stays tainted; its Terminating pods may be
	// force-deleted (forceDelete).
	stepKeep
	// stepAsk: a taint candidate; ask the source, and taint once it has
	// said Off for confirmFor.
	stepAsk
)

// cause says why a node is a candidate, for the Event.
type cause string

const (
	causeNotReady cause = "the node is NotReady"
	causeProbe    cause = "the leader's check of its kube-proxy health port fails"
)

// decide is a node's step in a round, and for stepAsk its cause.
//
// A node is back when it is Ready; with the fast path, when its check
// passes as well: a node tainted on the fast path is tainted before the
// node lifecycle controller has seen it silent, so its Ready condition is
// still the True of before the power-off, which says nothing. A node whose
// check has no result yet (a new leader) is not back either.
func decide(v view, s Settings) (step, cause) {
	back := v.Ready && (!s.FastPath || v.Probe == healthcheck.Healthy)
	switch {
	case v.Marked && back:
		return stepUntaint, ""
	case v.Marked:
		return stepKeep, ""
	case !s.Enabled || v.Tainted:
		// An operator's own taint is theirs; nothing is added to it.
		return stepNone, ""
	case !v.Ready:
		return stepAsk, causeNotReady
	case s.FastPath && v.Probe == healthcheck.Unhealthy:
		return stepAsk, causeProbe
	default:
		return stepNone, ""
	}
}

// forceDelete reports whether the Terminating pods of a node in stepKeep
// are force-deleted, before asking the source: only with DeletePods, and
// only while the taint is there (the source's Off is asked next).
func forceDelete(v view, s Settings) bool {
	return s.DeletePods && v.Marked && v.Tainted
}
