package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/metal-ccm/metal-ccm/pkg/sessions"
)

// TestRenderSessions checks the sessions section: every replica's session,
// the agents' one by one while they are few, and beyond maxRows only
// those with a session down, with the count of the others.
func TestRenderSessions(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	state := func(role, pod, node, st string) sessions.State {
		return sessions.State{Role: role, Pod: pod, Node: node, Peers: []sessions.Peer{
			{Protocol: "BGP", Name: "tor", Address: "198.18.0.1", State: st, Up: st == "established", Since: now.Add(-5 * time.Minute), BFD: bfdOf(role, st)},
		}}
	}
	agents := func(n, down int) []sessions.State {
		out := []sessions.State{state(sessions.RoleReplica, "ccm-0", "cp-0", "established")}
		for i := range n {
			st := "established"
			if i < down {
				st = "active"
			}
			out = append(out, state(sessions.RoleAgent, fmt.Sprintf("agent-%03d", i), fmt.Sprintf("node-%03d", i), st))
		}
		return out
	}
	tests := []struct {
		name     string
		sessions []sessions.State
		want     []string
		notWant  []string
	}{
		{"few agents: every one", agents(3, 1), []string{
			"  replica/ccm-0    cp-0      tor   198.18.0.1  established  -     5m",
			"  agent/agent-000  node-000  tor   198.18.0.1  active       down  5m",
			"  agent/agent-002  node-002  tor   198.18.0.1  established  up    5m",
			"  node agents: 2 of 3 with every session established",
			"A BGP session is not established",
		}, nil},
		{"many agents: those down", agents(maxRows+5, 2), []string{
			"agent/agent-001", "node agents: 23 of 25 with every session established",
		}, []string{"agent/agent-002"}},
		{"all up: no hint", agents(2, 0), []string{"node agents: 2 of 2"}, []string{"Next:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			st := &Status{Namespace: "kube-system", Leader: &Leader{Lease: "kube-system/cloud-controller-manager", Identity: "ccm-0_x", Renewed: now},
				Config: Config{BGPPeers: 1, AnnounceFrom: "Nodes"}, Sessions: tt.sessions}
			if err := render(&b, st, now); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("no %q in:\n%s", w, b.String())
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(b.String(), w) {
					t.Errorf("%q in:\n%s", w, b.String())
				}
			}
		})
	}
}

// TestRenderNoLeader checks that an expired Lease says nobody leads, and
// what to look at.
func TestRenderNoLeader(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	st := &Status{Namespace: "ccm", Leader: &Leader{Lease: "ccm/cloud-controller-manager", Identity: "ccm-0_x", Renewed: now.Add(-3 * time.Minute), Expired: true},
		Replicas: []Pod{{Name: "ccm-0", Node: "cp-0", Ready: true}}}
	var b strings.Builder
	if err := render(&b, st, now); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		"Leader:       none (Lease ccm/cloud-controller-manager last renewed 3m ago by ccm-0_x)",
		"No replica leads: nothing allocates or writes conditions",
	} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("no %q in:\n%s", w, b.String())
		}
	}
}

// TestLeads checks which replica's pod the leader's identity names: by its
// pod's name, or on the host's network by its node's.
func TestLeads(t *testing.T) {
	tests := []struct {
		identity string
		pod      Pod
		hostname string
		want     bool
	}{
		{"ccm-abc_0f1e", Pod{Name: "ccm-abc", Node: "cp-1"}, "", true},
		{"CP-1_0f1e", Pod{Name: "ccm-abc", Node: "cp-1"}, "", true},
		{"m1.example_0f1e", Pod{Name: "ccm-abc", Node: "cp-1"}, "m1.example", true},
		{"cp-2_0f1e", Pod{Name: "ccm-abc", Node: "cp-1"}, "cp-1", false},
		{"ccm-abc", Pod{Name: "ccm-abc", Node: "cp-1"}, "", false},
		{"_0f1e", Pod{Name: "ccm-abc"}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.identity, func(t *testing.T) {
			if got := leads(tt.identity, tt.pod, tt.hostname); got != tt.want {
				t.Errorf("leads(%q, %+v) = %v, want %v", tt.identity, tt.pod, got, tt.want)
			}
		})
	}
}

// TestRenderLeaderUnknown checks that a leader whose identity names no
// replica pod is shown, and the replicas' LEADER column says "?".
func TestRenderLeaderUnknown(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	st := &Status{Namespace: "ccm", Leader: &Leader{Lease: "ccm/cloud-controller-manager", Identity: "host_x", Renewed: now},
		Replicas: []Pod{{Name: "ccm-0", Node: "cp-0", Ready: true}}}
	var b strings.Builder
	if err := render(&b, st, now); err != nil {
		t.Fatal(err)
	}
	if want := "  ccm-0  cp-0  yes    0         ?\n"; !strings.Contains(b.String(), want) {
		t.Errorf("no %q in:\n%s", want, b.String())
	}
}

// bfdOf is the test's BFD state of a session: none for the replica's (a
// peer without BFD), up with an established session, else down.
func bfdOf(role, state string) string {
	switch {
	case role == sessions.RoleReplica:
		return ""
	case state == "established":
		return "up"
	default:
		return "down"
	}
}
