package integration

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/metal-ccm/metal-ccm/pkg/agent"
	"github.com/metal-ccm/metal-ccm/pkg/sessions"
	"github.com/metal-ccm/metal-ccm/test/framework"
)

// agentLeasePolicy names the chart's ValidatingAdmissionPolicy that limits
// the node agents' Lease writes (templates/agent-sessions.yaml).
const agentLeasePolicy = "metal-node-agent-leases"

// TestNodeAgentSessionsLeasePolicy applies the node agent's identity as the
// chart renders it (deploy/node-agent/agent-l2.yaml: the Role that grants
// create and patch on every Lease of kube-system, and the policy) and writes
// as an agent with a token bound to a real Pod, as the kubelet mounts it:
// the agent's publisher writes its own sessions Lease, and the API server
// refuses, by the policy, every other Lease the Role alone would allow
// (another pod's sessions Lease, the leader-election Leases of
// kube-controller-manager, kube-scheduler and the CCM, any new one), its
// own Lease owned by another pod or labelled as a replica's, and the same
// writes with a token bound to no pod; the L2 witness's update still works.
func TestNodeAgentSessionsLeasePolicy(t *testing.T) {
	const ns = "kube-system"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp.NodeAgentToken(t)
	own := createAgentPod(ctx, t, ns, "agent-sessions-own")
	other := createAgentPod(ctx, t, ns, "agent-sessions-other")
	bound := tokenClient(t, serviceAccountToken(ctx, t, ns, own))
	unbound := tokenClient(t, serviceAccountToken(ctx, t, ns, nil))

	// Leader-election Leases as kube-controller-manager and kube-scheduler
	// hold them (neither runs with leader election here).
	for _, name := range []string{"kube-controller-manager", "kube-scheduler"} {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name + "-holder")}}
		if _, err := client.CoordinationV1().Leases(ns).Create(ctx, l, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = client.CoordinationV1().Leases(ns).Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}

	// The policy is in effect once the API server has loaded it: until
	// then the Role alone lets the agent write any Lease (a dry run writes
	// nothing).
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := applyLease(ctx, bound, ns, leaseBody(ns, "kube-controller-manager", "x", nil, nil), true)
		return refusedByPolicy(err), nil
	})
	if err != nil {
		t.Fatalf("the policy %s does not refuse the agent's dry-run write of kube-controller-manager's Lease within a minute: %v", agentLeasePolicy, err)
	}

	agentClient, err := agent.NewClient(bound.rc)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("its own sessions Lease, by the agent's publisher", func(t *testing.T) {
		t.Cleanup(func() {
			_ = client.CoordinationV1().Leases(ns).Delete(context.Background(), sessions.LeaseName(own.Name), metav1.DeleteOptions{})
		})
		pctx, stop := context.WithCancel(ctx)
		var lastErr error
		p := &sessions.Publisher{
			Role: sessions.RoleAgent, Pod: own.Name, Node: "agent-sessions-node", Namespace: ns,
			Owner: sessions.Owner{Name: own.Name, UID: string(own.UID)},
			Peers: func() []sessions.Peer {
				return []sessions.Peer{{Protocol: "BGP", Address: "198.18.0.1", State: "established", Up: true}}
			},
			Apply: func(ctx context.Context, name string, body []byte) error {
				lastErr = agentClient.Leases(ns).Apply(ctx, name, body)
				return lastErr
			},
			Poll: 100 * time.Millisecond, Jitter: time.Nanosecond, MinInterval: time.Hour,
		}
		done := make(chan struct{})
		go func() { defer close(done); p.Run(pctx) }()
		var lease *coordinationv1.Lease
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			l, err := client.CoordinationV1().Leases(ns).Get(ctx, sessions.LeaseName(own.Name), metav1.GetOptions{})
			lease = l
			return err == nil, nil
		})
		stop()
		<-done
		if err != nil {
			t.Fatalf("the agent's publisher did not write %s within 30s; its last write: %v", sessions.LeaseName(own.Name), lastErr)
		}
		st, err := sessions.Decode(lease)
		if err != nil {
			t.Fatal(err)
		}
		if st.Role != sessions.RoleAgent || st.Pod != own.Name || len(st.Peers) != 1 || !st.Peers[0].Up {
			t.Errorf("published %+v", st)
		}
		if o := lease.OwnerReferences; len(o) != 1 || o[0].UID != own.UID {
			t.Errorf("Lease %s owned by %+v, want the pod %s", lease.Name, o, own.UID)
		}
		// Written again (an update: the Lease exists).
		if _, err := applyLease(ctx, bound, ns, leaseBody(ns, sessions.LeaseName(own.Name), sessions.RoleAgent, own, nil), false); err != nil {
			t.Errorf("the agent may not update its own sessions Lease: %v", err)
		}
	})

	// Each write the Role allows and the policy refuses.
	for _, tc := range []struct {
		name  string
		c     *tokenClientset
		lease []byte
	}{
		{"another pod's sessions Lease", bound, leaseBody(ns, sessions.LeaseName(other.Name), sessions.RoleAgent, other, nil)},
		{"its own sessions Lease, owned by another pod", bound, leaseBody(ns, sessions.LeaseName(own.Name), sessions.RoleAgent, other, nil)},
		{"its own sessions Lease, owned by no pod", bound, leaseBody(ns, sessions.LeaseName(own.Name), sessions.RoleAgent, nil, nil)},
		{"its own sessions Lease, owned by its pod and another", bound, leaseBody(ns, sessions.LeaseName(own.Name), sessions.RoleAgent, own, other)},
		{"its own sessions Lease, labelled as a replica's", bound, leaseBody(ns, sessions.LeaseName(own.Name), sessions.RoleReplica, own, nil)},
		{"kube-controller-manager's leader-election Lease", bound, leaseBody(ns, "kube-controller-manager", "", nil, nil)},
		{"kube-scheduler's leader-election Lease", bound, leaseBody(ns, "kube-scheduler", "", nil, nil)},
		{"the CCM's leader-election Lease", bound, leaseBody(ns, "cloud-controller-manager", "", nil, nil)},
		{"a new Lease", bound, leaseBody(ns, "agent-sessions-new", "", nil, nil)},
		{"its pod's sessions Lease with a token bound to no pod", unbound, leaseBody(ns, sessions.LeaseName(own.Name), sessions.RoleAgent, own, nil)},
	} {
		t.Run("refused: "+tc.name, func(t *testing.T) {
			var meta struct {
				Metadata metav1.ObjectMeta `json:"metadata"`
			}
			if err := json.Unmarshal(tc.lease, &meta); err != nil {
				t.Fatal(err)
			}
			name := meta.Metadata.Name
			before, errBefore := client.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
			_, err := applyLease(ctx, tc.c, ns, tc.lease, false)
			if !refusedByPolicy(err) {
				t.Errorf("writing Lease %s/%s: %v; want the API server's refusal by the policy %s", ns, name, err, agentLeasePolicy)
			}
			after, errAfter := client.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(errBefore) && !apierrors.IsNotFound(errAfter):
				t.Errorf("Lease %s was created: %v", name, errAfter)
				_ = client.CoordinationV1().Leases(ns).Delete(ctx, name, metav1.DeleteOptions{})
			case errBefore == nil && (errAfter != nil || after.ResourceVersion != before.ResourceVersion):
				t.Errorf("Lease %s changed: resourceVersion %s, now %v (%v)", name, before.ResourceVersion, after, errAfter)
			}
		})
	}

	t.Run("refused: an update of kube-controller-manager's Lease (no right)", func(t *testing.T) {
		l, err := client.CoordinationV1().Leases(ns).Get(ctx, "kube-controller-manager", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		l.Spec.HolderIdentity = ptr.To(own.Name)
		if _, err := bound.CoordinationV1().Leases(ns).Update(ctx, l, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("update of kube-controller-manager's Lease by the agent: %v, want forbidden", err)
		}
	})

	t.Run("the L2 witness Lease is still the agents' to update", func(t *testing.T) {
		name := strings.TrimPrefix(framework.L2WitnessLease, ns+"/")
		for _, c := range []*tokenClientset{bound, unbound} {
			ac, err := agent.NewClient(c.rc)
			if err != nil {
				t.Fatal(err)
			}
			l, err := ac.Leases(ns).Get(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			l.Spec.HolderIdentity = ptr.To("agent-sessions-node")
			if _, err := ac.Leases(ns).Update(ctx, l); err != nil {
				t.Errorf("the agent's update of the L2 witness: %v", err)
			}
		}
	})
}

// createAgentPod makes a Pod of the node agent's ServiceAccount that no
// node runs (there is no scheduler), for tokens bound to it.
func createAgentPod(ctx context.Context, t *testing.T, ns, name string) *v1.Pod {
	t.Helper()
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: v1.PodSpec{
		ServiceAccountName: framework.NodeAgentName,
		Containers:         []v1.Container{{Name: "agent", Image: "registry.invalid/metal-node-agent:none"}},
	}}
	out, err := client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))})
	})
	return out
}

// serviceAccountToken is a token of the node agent's ServiceAccount bound
// to pod as the kubelet requests it for the pod's projected volume, or,
// with a nil pod, bound to nothing.
func serviceAccountToken(ctx context.Context, t *testing.T, ns string, pod *v1.Pod) string {
	t.Helper()
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(600))}}
	if pod != nil {
		req.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}
	}
	tr, err := client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, framework.NodeAgentName, req, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// tokenClientset is a clientset that authenticates with a token, and its
// configuration.
type tokenClientset struct {
	kubernetes.Interface
	rc *rest.Config
}

func tokenClient(t *testing.T, token string) *tokenClientset {
	t.Helper()
	admin, err := cp.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	rc := rest.AnonymousClientConfig(admin)
	rc.BearerToken = token
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return &tokenClientset{cs, rc}
}

// leaseBody is a server-side apply body of a Lease labelled as a sessions
// Lease of role (none when empty), owned by the pods given.
func leaseBody(ns, name, role string, owners ...*v1.Pod) []byte {
	meta := map[string]any{"name": name, "namespace": ns}
	if role != "" {
		meta["labels"] = map[string]string{sessions.LabelRole: role}
		meta["annotations"] = map[string]string{sessions.AnnotationState: `{"role":"` + role + `","peers":[]}`}
	}
	var refs []map[string]any
	for _, o := range owners {
		if o != nil {
			refs = append(refs, map[string]any{"apiVersion": "v1", "kind": "Pod", "name": o.Name, "uid": string(o.UID)})
		}
	}
	if refs != nil {
		meta["ownerReferences"] = refs
	}
	body, _ := json.Marshal(map[string]any{ //nolint:errchkjson // maps of strings
		"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta,
		"spec": map[string]any{"holderIdentity": name + "-agent"},
	})
	return body
}

// applyLease writes body by server-side apply as the agents do (create or
// patch), or only tries it (dryRun).
func applyLease(ctx context.Context, c *tokenClientset, ns string, body []byte, dryRun bool) (*coordinationv1.Lease, error) {
	var meta struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(body, &meta); err != nil {
		return nil, err
	}
	opts := metav1.PatchOptions{FieldManager: "metal-node-agent", Force: ptr.To(true)}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	return c.CoordinationV1().Leases(ns).Patch(ctx, meta.Metadata.Name, types.ApplyPatchType, body, opts)
}

// refusedByPolicy says whether err is the API server's refusal by the
// agents' Lease policy (not by RBAC, which would allow the write).
func refusedByPolicy(err error) bool {
	var status apierrors.APIStatus
	return apierrors.IsForbidden(err) && errors.As(err, &status) &&
		strings.Contains(status.Status().Message, "ValidatingAdmissionPolicy '"+agentLeasePolicy+"'")
}
