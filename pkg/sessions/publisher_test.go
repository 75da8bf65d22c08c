package sessions

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/json"
)

func peer(state string) []Peer {
	return []Peer{{Protocol: "BGP", Name: "tor", Address: "198.18.0.1", State: state, Up: state == "established"}}
}

// TestPacer checks when the publisher writes, on a clock of its own: the
// first state after the jitter, a change no sooner than minInterval after
// the last write, nothing while nothing changes, a flap that comes back
// before its write not at all, and a failed write again after
// minInterval.
func TestPacer(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	type step struct {
		at    int
		state string
		write bool
		fail  bool
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"first after the jitter, then only on change", []step{
			{0, "active", false, false}, {4, "active", true, false}, {6, "active", false, false},
			{8, "established", false, false}, {33, "established", false, false}, {34, "established", true, false},
			{100, "established", false, false},
		}},
		{"a flap back before its write is never written", []step{
			{0, "established", false, false}, {4, "established", true, false},
			{10, "active", false, false}, {20, "established", false, false}, {40, "established", false, false},
		}},
		{"a failed write is tried again after minInterval", []step{
			{0, "established", false, false}, {4, "established", true, true}, {10, "established", false, false}, {34, "established", true, false},
			{40, "established", false, false},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := pacer{minInterval: 30 * time.Second, jitter: 10 * time.Second, rand: func(int64) int64 { return int64(4 * time.Second) }}
			for _, s := range tt.steps {
				got, write := c.observe(peer(s.state), at(s.at))
				if write != s.write {
					t.Fatalf("at %ds (%s): write %v, want %v", s.at, s.state, write, s.write)
				}
				if write {
					if got[0].State != s.state {
						t.Errorf("at %ds: wrote %q", s.at, got[0].State)
					}
					c.wrote(key(got), at(s.at), !s.fail)
				}
			}
		})
	}
}

// TestSince checks that a session keeps the time it reached its state
// while the state holds, and gets a new one when it changes.
func TestSince(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := stamp(nil, peer("established"), t0)
	b := stamp(a, peer("established"), t0.Add(time.Minute))
	if !b[0].Since.Equal(t0) {
		t.Errorf("since %v, want %v", b[0].Since, t0)
	}
	c := stamp(b, peer("active"), t0.Add(2*time.Minute))
	if !c[0].Since.Equal(t0.Add(2 * time.Minute)) {
		t.Errorf("since %v after a change", c[0].Since)
	}
}

// TestApplyBodyDecodes checks that what a publisher writes is what the
// status command reads, owner included.
func TestApplyBodyDecodes(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := State{Role: RoleAgent, Pod: "agent-x", Node: "n1", Peers: stamp(nil, peer("established"), now), Written: now}
	body, err := applyBody("kube-system", Owner{Name: "agent-x", UID: "u1"}, st)
	if err != nil {
		t.Fatal(err)
	}
	var lease coordinationv1.Lease
	if err := json.UnmarshalCaseSensitivePreserveInts(body, &lease); err != nil {
		t.Fatal(err)
	}
	if lease.Name != "metal-ccm-sessions.agent-x" || lease.Labels[LabelRole] != RoleAgent ||
		len(lease.OwnerReferences) != 1 || lease.OwnerReferences[0].UID != "u1" {
		t.Errorf("lease %+v", lease.ObjectMeta)
	}
	got, err := Decode(&lease)
	if err != nil {
		t.Fatal(err)
	}
	if got.Node != "n1" || len(got.Peers) != 1 || !got.Peers[0].Up || !got.Written.Equal(now) || !got.Peers[0].Since.Equal(now) {
		t.Errorf("decoded %+v", got)
	}
	if _, err := Decode(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "x"}}); err == nil {
		t.Error("a Lease without the annotation decodes")
	}
}

// TestDecodeTrustsNameAndLabel: the writer shown is the one the Lease's
// name and label say (what the agents' admission policy checks), not what
// its annotation claims.
func TestDecodeTrustsNameAndLabel(t *testing.T) {
	for _, tc := range []struct {
		name, label, role, pod string
		wantRole, wantPod      string
	}{
		{name: "metal-ccm-sessions.agent-x", label: RoleAgent, role: RoleReplica, pod: "ccm-0", wantRole: RoleAgent, wantPod: "agent-x"},
		{name: "metal-ccm-sessions.ccm-0", label: RoleReplica, role: RoleReplica, pod: "ccm-0", wantRole: RoleReplica, wantPod: "ccm-0"},
		{name: "other", label: "", role: RoleReplica, pod: "ccm-0", wantRole: RoleReplica, wantPod: "ccm-0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lease := coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
				Name:        tc.name,
				Labels:      map[string]string{LabelRole: tc.label},
				Annotations: map[string]string{AnnotationState: `{"role":"` + tc.role + `","pod":"` + tc.pod + `","peers":[]}`},
			}}
			got, err := Decode(&lease)
			if err != nil {
				t.Fatal(err)
			}
			if got.Role != tc.wantRole || got.Pod != tc.wantPod {
				t.Errorf("Decode: role %q, pod %q; want %q, %q", got.Role, got.Pod, tc.wantRole, tc.wantPod)
			}
		})
	}
}
