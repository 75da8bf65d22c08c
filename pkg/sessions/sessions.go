// Package sessions publishes, in the API server, the state of the sessions a
// replica or a node agent holds with routers, which no other object shows:
// one Lease per process (pod), in the process's namespace, whose annotation
// holds its peers and their states, owned by the pod (deleted with it).
// `kubectl metal-ccm status` reads them. A process writes its Lease only when
// a session's state changes, at most once per MinInterval, the first write
// of a change delayed by a random part of Jitter so that a router's restart
// seen by every node agent at once spreads over that time
// (docs/operating.md, "Where the sessions come from").
package sessions

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Names on the Leases.
const (
	// LabelRole marks a sessions Lease, with the role of its writer
	// (RoleReplica or RoleAgent): the status command lists the Leases
	// with this label.
	LabelRole = "metal-ccm.io/sessions"
	// AnnotationState holds the State, as JSON.
	AnnotationState = "metal-ccm.io/sessions"

	RoleReplica = "replica"
	RoleAgent   = "agent"

	// namePrefix starts every sessions Lease's name, then the pod's.
	namePrefix = "metal-ccm-sessions."
)

// Peer is one session, as published.
type Peer struct {
	// Protocol is the announcement protocol ("BGP").
	Protocol string `json:"protocol"`
	// Name is the peer's name in the config (may be empty).
	Name    string `json:"name,omitempty"`
	Address string `json:"address"`
	// State is the session's state, in the protocol's words (BGP's FSM
	// states in lower case: "established", "active", ...).
	State string `json:"state"`
	// Since is when the writer saw the session reach State.
	Since time.Time `json:"since"`
	// Up says whether State is the protocol's established state.
	Up bool `json:"up"`
	// BFD is the state of the session's BFD session ("up", "down",
	// "init", "admindown"); empty without BFD.
	BFD string `json:"bfd,omitempty"`
}

// State is what one process publishes.
type State struct {
	// Role is RoleReplica or RoleAgent.
	Role string `json:"role"`
	// Pod is the writer's pod; Node its node, when known.
	Pod  string `json:"pod"`
	Node string `json:"node,omitempty"`
	// Peers are the sessions, in the writer's config's order.
	Peers []Peer `json:"peers"`
	// Written is when the Lease was written (its renewTime); the Lease is
	// written only on change, so an old time is no sign of staleness.
	Written time.Time `json:"written"`
}

// LeaseName is the name of the sessions Lease of pod.
func LeaseName(pod string) string { return namePrefix + pod }

// Owner names the pod that owns the Lease, so that the garbage collector
// deletes the Lease with the pod. Empty UID: no owner.
type Owner struct {
	Name string
	UID  string
}

// applyBody is the server-side apply body of the Lease of st.
func applyBody(namespace string, owner Owner, st State) ([]byte, error) {
	state, err := json.Marshal(State{Role: st.Role, Pod: st.Pod, Node: st.Node, Peers: st.Peers})
	if err != nil {
		return nil, fmt.Errorf("sessions: %w", err)
	}
	meta := map[string]any{
		"name":        LeaseName(st.Pod),
		"namespace":   namespace,
		"labels":      map[string]string{LabelRole: st.Role},
		"annotations": map[string]string{AnnotationState: string(state)},
	}
	if owner.UID != "" {
		meta["ownerReferences"] = []map[string]any{{"apiVersion": "v1", "kind": "Pod", "name": owner.Name, "uid": owner.UID}}
	}
	body := map[string]any{
		"apiVersion": "coordination.k8s.io/v1",
		"kind":       "Lease",
		"metadata":   meta,
		"spec": map[string]any{
			"holderIdentity": st.Pod,
			"renewTime":      metav1.NewMicroTime(st.Written),
		},
	}
	out, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("sessions: %w", err)
	}
	return out, nil
}

// Decode reads the State of a sessions Lease.
func Decode(lease *coordinationv1.Lease) (State, error) {
	raw, ok := lease.Annotations[AnnotationState]
	if !ok {
		return State{}, fmt.Errorf("lease %s/%s has no %s annotation", lease.Namespace, lease.Name, AnnotationState)
	}
	var st State
	if err := json.Unmarshal([]byte(raw), &st); err != nil {
		return State{}, fmt.Errorf("lease %s/%s: annotation %s: %w", lease.Namespace, lease.Name, AnnotationState, err)
	}
	// The writer's role and pod are those of the Lease's label and name,
	// which the node agents' admission policy checks (docs/deploy.md),
	// not what the annotation says.
	if role := lease.Labels[LabelRole]; role != "" {
		st.Role = role
	}
	if pod, ok := strings.CutPrefix(lease.Name, namePrefix); ok && pod != "" {
		st.Pod = pod
	}
	if lease.Spec.RenewTime != nil {
		st.Written = lease.Spec.RenewTime.Time
	}
	return st, nil
}

// key is what a change of peers is: names, addresses and states, not times.
func key(peers []Peer) string {
	parts := make([]string, len(peers))
	for i, p := range peers {
		parts[i] = p.Protocol + "/" + p.Name + "/" + p.Address + "=" + p.State
		if p.BFD != "" {
			parts[i] += "+bfd:" + p.BFD
		}
	}
	return strings.Join(parts, ",")
}

// stamp gives each peer of now its Since: the previous one's when its
// state did not change, at otherwise.
func stamp(prev, now []Peer, at time.Time) []Peer {
	out := slices.Clone(now)
	for i := range out {
		out[i].Since = at
		for _, p := range prev {
			if p.Protocol == out[i].Protocol && p.Address == out[i].Address && p.Name == out[i].Name && p.State == out[i].State {
				out[i].Since = p.Since
				break
			}
		}
	}
	return out
}
