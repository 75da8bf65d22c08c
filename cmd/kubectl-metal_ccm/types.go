package main

import (
	"time"

	"github.com/metal-ccm/metal-ccm/pkg/sessions"
)

// Status is what `kubectl metal-ccm status` shows, and its -o json.
type Status struct {
	// Namespace is the CCM's (the chart's release namespace).
	Namespace string `json:"namespace"`
	// Leader is the leader-election Lease; nil when there is none.
	Leader *Leader `json:"leader"`
	// LeaderPod is the replica pod the leader's identity names; empty
	// when none does (no leader, or a hostname that is neither a pod's
	// nor a node's).
	LeaderPod string `json:"leaderPod,omitempty"`
	// Replicas and Agents are the pods of the CCM and of the node agents.
	Replicas []Pod  `json:"replicas"`
	Agents   []Pod  `json:"agents"`
	Config   Config `json:"config"`
	// Pools are each pool's addresses by family; OutsidePools counts the
	// Services' addresses in no pool.
	Pools        []Pool `json:"pools"`
	OutsidePools int    `json:"outsidePools"`
	// Sessions are what the replicas and agents publish (pkg/sessions).
	Sessions []sessions.State `json:"sessions"`
	Nodes    Nodes            `json:"nodes"`
	Services Services         `json:"services"`
	// Warnings are what could not be read.
	Warnings []string `json:"warnings,omitempty"`
}

// Leader is the leader-election Lease.
type Leader struct {
	Lease    string    `json:"lease"`
	Identity string    `json:"identity"`
	Renewed  time.Time `json:"renewed"`
	// Expired: not renewed within its duration; nobody leads.
	Expired bool `json:"expired"`
}

// Pod is a replica's or an agent's pod.
type Pod struct {
	Name     string `json:"name"`
	Node     string `json:"node"`
	Phase    string `json:"phase"`
	Ready    bool   `json:"ready"`
	Restarts int32  `json:"restarts"`
	Leader   bool   `json:"leader,omitempty"`
}

// Config is what the status says of the cloud-config.
type Config struct {
	Source string `json:"source"`
	// Error: the config could not be read or parsed.
	Error             string `json:"error,omitempty"`
	Class             string `json:"class,omitempty"`
	ServeDefaultClass bool   `json:"serveDefaultClass,omitempty"`
	BGPPeers          int    `json:"bgpPeers"`
	AnnounceFrom      string `json:"announceFrom,omitempty"`
}

// Pool is one pool's addresses of one family.
type Pool struct {
	Name       string   `json:"name"`
	Family     string   `json:"family"`
	Size       uint64   `json:"size"`
	Used       uint64   `json:"used"`
	Free       uint64   `json:"free"`
	Announce   []string `json:"announce"`
	AutoAssign bool     `json:"autoAssign"`
}

// Nodes are the nodes, by whether they may carry LoadBalancer traffic.
type Nodes struct {
	Total    int            `json:"total"`
	Eligible int            `json:"eligible"`
	Excluded []ExcludedNode `json:"excluded"`
	// NoneWhy, when no node is eligible, says why (nodes.Why).
	NoneWhy string `json:"noneWhy,omitempty"`
}

// ExcludedNode is a node that carries no LoadBalancer traffic, and why.
type ExcludedNode struct {
	Name    string   `json:"name"`
	Reasons []string `json:"reasons"`
}

// Services are the LoadBalancer Services the CCM serves.
type Services struct {
	Total     int              `json:"total"`
	Announced int              `json:"announced"`
	Pending   []PendingService `json:"pending"`
}

// PendingService is a Service not announced (yet), and why.
type PendingService struct {
	Namespace string   `json:"namespace"`
	Name      string   `json:"name"`
	Addresses []string `json:"addresses"`
	// Condition is the condition that is not True (empty: none written).
	Condition string `json:"condition,omitempty"`
	Reason    string `json:"reason"`
	Message   string `json:"message"`
}

// running: a replica leads, or one is Ready.
func (s *Status) running() bool {
	if s.Leader != nil && !s.Leader.Expired {
		return true
	}
	for _, p := range s.Replicas {
		if p.Ready {
			return true
		}
	}
	return false
}
