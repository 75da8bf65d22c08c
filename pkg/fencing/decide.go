// Package fencing powers off, through their BMCs, nodes that have been
// NotReady for too long while their machines still say On (a hung kernel,
// a frozen kubelet): once the machine is off, the out-of-service rule
// (pkg/outofservice) lets their pods and volumes move. Only the leader
// fences, with guard rails: a limit on the nodes fenced at once, a fresh
// read of the node and its heartbeat Lease right before the power-off, no
// fence on a source that cannot be asked, and a dry run.
package fencing

import (
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/metal-ccm/metal-ccm/pkg/annotation"
)

// Settings are the controller's settings of the moment.
type Settings struct {
	Enabled bool
	After   time.Duration
	// MaxNodes is the most nodes fenced and not Ready again at once.
	MaxNodes int
	// MaxShare, in percent of the nodes (0: none), lowers that limit to
	// the share of the nodes, rounded down, when it is below MaxNodes.
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

// Decision is which nodes are due to be fenced, and how many may be.
type Decision struct {
	// Due are the NotReady nodes past After and not fenced yet, the longest
	// NotReady first.
	Due []NodeState
	// Fenced counts the fenced nodes not Ready again.
	Fenced int
	// Limit is the most nodes fenced and not Ready again at once: MaxNodes,
	// or MaxShare of the nodes when that is lower.
	Limit int
}

// Room is how many of Due may be fenced now: the first ones, in order;
// the others are held.
func (d Decision) Room() int { return max(0, d.Limit-d.Fenced) }

// Limit is the most nodes, out of total, fenced and not Ready again at once.
func (s Settings) Limit(total int) int {
	limit := s.MaxNodes
	if s.MaxShare > 0 {
		if share := total * s.MaxShare / 100; share < limit {
			limit = share
		}
	}
	return limit
}

// Decide says which nodes are due to be fenced at now, and how many may be.
// A node is due when it is NotReady, has been for at least After, and is
// not fenced yet. At most Limit nodes are fenced and not Ready again at
// once: with more due than there is room for, the longest NotReady go
// first and the others wait until a fenced node is Ready again (or
// deleted). A fenced node that never comes back keeps its place, so that
// whatever takes nodes down (a partition, the control plane), fencing
// never powers off more than Limit of them.
func Decide(nodes []NodeState, now time.Time, s Settings) Decision {
	var d Decision
	for _, n := range nodes {
		if n.Ready {
			continue
		}
		if n.Fenced {
			d.Fenced++
			continue
		}
		if n.NotReadySince.IsZero() || now.Sub(n.NotReadySince) < s.After {
			continue
		}
		d.Due = append(d.Due, n)
	}
	slices.SortStableFunc(d.Due, func(a, b NodeState) int {
		if c := a.NotReadySince.Compare(b.NotReadySince); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	d.Limit = s.Limit(len(nodes))
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
