package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

func TestLeaseGateBlocks(t *testing.T) {
	g := newLeaseGate("kube-system", "cloud-controller-manager")
	base := "https://api/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"
	for _, tc := range []struct {
		method, url string
		want        bool
	}{
		{http.MethodPut, base + "/cloud-controller-manager", true},
		{http.MethodPatch, base + "/cloud-controller-manager", true},
		{http.MethodDelete, base + "/cloud-controller-manager", true},
		{http.MethodPost, base, true},
		{http.MethodGet, base + "/cloud-controller-manager", false},
		{http.MethodPut, base + "/another-lease", false},
		{http.MethodPut, "https://api/apis/coordination.k8s.io/v1/namespaces/other/leases/cloud-controller-manager", false},
		{http.MethodPatch, "https://api/api/v1/namespaces/kube-system/services/cloud-controller-manager", false},
	} {
		t.Run(tc.method+" "+tc.url, func(t *testing.T) {
			if got := g.blocks(httptest.NewRequest(tc.method, tc.url, nil)); got != tc.want {
				t.Errorf("blocks = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestHeldByLiveReplica(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	lease := func(holder string, renewed time.Duration, seconds int32) *coordinationv1.Lease {
		l := &coordinationv1.Lease{}
		if holder != "" {
			l.Spec.HolderIdentity = ptr.To(holder)
		}
		r := metav1.NewMicroTime(now.Add(-renewed))
		l.Spec.RenewTime = &r
		l.Spec.LeaseDurationSeconds = ptr.To(seconds)
		return l
	}
	for _, tc := range []struct {
		name  string
		lease *coordinationv1.Lease
		want  bool
	}{
		{"held, renewed 1s ago", lease("b", time.Second, 15), true},
		{"held, expired", lease("b", 16*time.Second, 15), false},
		{"released", lease("", 0, 1), false},
		{"never renewed", &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("b")}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := heldByLiveReplica(tc.lease, now); got != tc.want {
				t.Errorf("heldByLiveReplica = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestHandOver(t *testing.T) {
	held := func(holder string) *coordinationv1.Lease {
		now := metav1.NewMicroTime(time.Now())
		return &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "ccm"},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), RenewTime: &now, LeaseDurationSeconds: ptr.To[int32](15)},
		}
	}
	newElection := func(lease *coordinationv1.Lease, leading bool) *election {
		e := &election{namespace: "kube-system", name: "ccm", retryPeriod: 10 * time.Millisecond,
			client: fake.NewClientset(lease), gate: newLeaseGate("kube-system", "ccm")}
		e.leading.Store(leading)
		return e
	}
	ctx := context.Background()

	handOver := func(e *election) bool {
		e.stopElecting(ctx)
		if !e.gate.closed.Load() {
			t.Error("the gate is open")
		}
		return e.othersRun(ctx)
	}
	t.Run("follower sees a live leader", func(t *testing.T) {
		e := newElection(held("leader"), false)
		if !handOver(e) {
			t.Error("othersRun = false, want true")
		}
	})
	t.Run("follower sees no live leader", func(t *testing.T) {
		l := held("leader")
		l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now().Add(-time.Minute)}
		if handOver(newElection(l, false)) {
			t.Error("othersRun = true, want false")
		}
	})
	t.Run("leader releases, nobody takes over", func(t *testing.T) {
		e := newElection(held("me"), true)
		if handOver(e) {
			t.Error("othersRun = true, want false")
		}
		l, err := e.client.CoordinationV1().Leases("kube-system").Get(ctx, "ccm", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if h := ptr.Deref(l.Spec.HolderIdentity, "-"); h != "" || ptr.Deref(l.Spec.LeaseDurationSeconds, 0) != 1 {
			t.Errorf("after release: holder %q, duration %v; want none, 1s", h, l.Spec.LeaseDurationSeconds)
		}
	})
	t.Run("leader releases, another replica takes over", func(t *testing.T) {
		e := newElection(held("me"), true)
		leases := e.client.CoordinationV1().Leases("kube-system")
		go func() {
			for {
				l, err := leases.Get(ctx, "ccm", metav1.GetOptions{})
				if err == nil && ptr.Deref(l.Spec.HolderIdentity, "") == "" {
					l.Spec.HolderIdentity = ptr.To("other")
					if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err == nil {
						return
					}
				}
				time.Sleep(time.Millisecond)
			}
		}()
		if !handOver(e) {
			t.Error("othersRun = false, want true")
		}
	})
}
