package framework

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// nodeLeaseNamespace holds the kubelets' heartbeat Leases.
const nodeLeaseNamespace = "kube-node-lease"

// KeepNodeLease renews node name's heartbeat Lease every 5 s, as its
// kubelet would, until ctx ends, so that kube-controller-manager's node
// lifecycle controller keeps a Node without a kubelet Ready. The first
// renewal is made before it returns.
func KeepNodeLease(ctx context.Context, cs kubernetes.Interface, name string) error {
	if err := renewNodeLease(ctx, cs, name); err != nil {
		return err
	}
	go func() {
		tick := time.NewTicker(5 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				// A failed renewal is retried at the next tick; the
				// lease lasts 40 s.
				_ = renewNodeLease(ctx, cs, name)
			}
		}
	}()
	return nil
}

func renewNodeLease(ctx context.Context, cs kubernetes.Interface, name string) error {
	leases := cs.CoordinationV1().Leases(nodeLeaseNamespace)
	now := metav1.NewMicroTime(time.Now())
	duration := int32(40)
	l, err := leases.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: nodeLeaseNamespace},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &name, LeaseDurationSeconds: &duration, RenewTime: &now},
		}, metav1.CreateOptions{})
	} else if err == nil {
		l.Spec.RenewTime = &now
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("renew node lease %s: %w", name, err)
	}
	return nil
}
