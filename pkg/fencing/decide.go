// Package fencing powers off, through their BMCs, nodes that have been
// NotReady for too long while their machines still say On (a hung kernel,
// a frozen kubelet): once the machine is off, the out-of-service rule
// (pkg/outofservice) lets their pods and volumes move. Only the leader
// fences, with guard rails: a limit on the NotReady nodes at once, a fresh
// read of the node and its heartbeat Lease right before the power-off, no
// fence on a source that cannot be asked, and a dry run.
package fencing

import (
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/metal-ccm/metal-ccm/pkg/annotation"
)

// Settings are the controller's settings of the moment.
type Settings struct {
	Enabled  bool
	After    time.Duration
	MaxNodes int
	// MaxShare, in percent of the nodes (0: none), lowers the limit to
	// that share of the nodes, rounded down, when it is below MaxNodes.
	MaxShare int
	DryRun   bool
	Source   string // for the Events
}

// NodeState is what the decision knows of a node.
type NodeState struct {
	Name  string
	Ready bool
	// NotReadySince is when the Ready condition last changed to not True;
	// zero for a node without a Ready condition (never fenced).
	NotReadySince time.Time
	// Fenced: the node carries the fencing mark (fenced, not Ready since).
	Fenced bool
}

// Decision is which nodes are due to be fenced.
type Decision struct {
	// Due are the NotReady nodes past After and not fenced yet, by name.
	Due []NodeState
	// NotReady counts the NotReady nodes, fenced ones included.
	NotReady int
	// Limit is the most NotReady nodes with which any is fenced: MaxNodes,
	// or MaxShare of the nodes when that is lower.
	Limit int
	// Held: more nodes are NotReady than Limit, so none of Due is fenced.
	Held bool
}

// Limit is the most NotReady nodes, out of total, with which any is fenced.
func (s Settings) Limit(total int) int {
	limit := s.MaxNodes
	if s.MaxShare > 0 {
		if share := total * s.MaxShare / 100; share < limit {
			limit = share
		}
	}
	return limit
}

// Decide says which nodes are due to be fenced at now. A node is due when it
// is NotReady, has been for at least After, and is not fenced yet. When more
// nodes are NotReady than the limit (MaxNodes, or MaxShare of the nodes when
// lower), counting the fenced ones that are not
// Ready again), fencing is held: none is fenced, as in medik8s'
// node-healthcheck. So many nodes at once point at a cause no power-off
// mends (a network partition, the control plane), and the limit keeps
// fencing from taking down more than MaxNodes nodes whatever happens.
func Decide(nodes []NodeState, now time.Time, s Settings) Decision {
	var d Decision
	for _, n := range nodes {
		if n.Ready {
			continue
		}
		d.NotReady++
		if n.Fenced || n.NotReadySince.IsZero() || now.Sub(n.NotReadySince) < s.After {
			continue
		}
		d.Due = append(d.Due, n)
	}
	d.Limit = s.Limit(len(nodes))
	d.Held = len(d.Due) > 0 && d.NotReady > d.Limit
	return d
}

// State is what Decide needs of a Node.
func State(n *v1.Node) NodeState {
	s := NodeState{Name: n.Name}
	_, s.Fenced = n.Annotations[annotation.Fenced]
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			s.Ready = c.Status == v1.ConditionTrue
			if !s.Ready {
				s.NotReadySince = c.LastTransitionTime.Time
			}
		}
	}
	return s
}
