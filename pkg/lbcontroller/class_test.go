package lbcontroller

import (
	"context"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	servicehelper "k8s.io/cloud-provider/service/helpers"
	"k8s.io/utils/ptr"

	"github.com/metal-ccm/metal-ccm/pkg/lbrule"
)

// TestControllerServesItsClassOnly: with a class, the Services of another
// class and those without one are not touched (no provider call, status,
// finalizer or Event), even one being deleted with the cleanup finalizer
// that another implementation holds; a Service of the class is served,
// and cleaned up when its type changes (which clears its class).
func TestControllerServesItsClassOnly(t *testing.T) {
	const ours = "metal-ccm.io/bgp"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mine := lb("mine")
	mine.Spec.LoadBalancerClass = ptr.To(ours)
	other := lb("other")
	other.Spec.LoadBalancerClass = ptr.To("example.com/other")
	othersDeleting := lb("others-deleting")
	othersDeleting.Spec.LoadBalancerClass = ptr.To("example.com/other")
	othersDeleting.DeletionTimestamp = ptr.To(metav1.Now())
	othersDeleting.Finalizers = []string{servicehelper.LoadBalancerCleanupFinalizer}
	othersDeleting.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: "198.18.200.1"}}
	classless := lb("classless")
	cs := fake.NewClientset(mine, other, othersDeleting, classless)
	bal := &fakeBalancer{ips: map[string]string{}}
	f := informers.NewSharedInformerFactory(cs, 0)
	c, err := New(bal, lbrule.Rule{Class: ours}, cs, cs, f.Core().V1().Services(), "cluster")
	if err != nil {
		t.Fatal(err)
	}
	// Asked for before the informer's Services, and synced by the one
	// worker in that order: once mine is served, these were synced.
	for _, s := range []*v1.Service{other, othersDeleting, classless} {
		c.Requeue(Key(s))
	}
	f.Start(ctx.Done())
	go c.Run(ctx, 1)

	get, eventually := serviceGetter(ctx, t, cs), waiter(ctx, t)
	eventually("mine gets its finalizer and address", func() bool {
		s := get("mine")
		return servicehelper.HasLBFinalizer(s) && len(s.Status.LoadBalancer.Ingress) == 1
	})
	for _, name := range []string{"other", "classless"} {
		if s := get(name); len(s.Finalizers) != 0 || len(s.Status.LoadBalancer.Ingress) != 0 {
			t.Errorf("%s was touched: finalizers %v, status %+v", name, s.Finalizers, s.Status.LoadBalancer)
		}
	}
	if s := get("others-deleting"); !servicehelper.HasLBFinalizer(s) || len(s.Status.LoadBalancer.Ingress) != 1 {
		t.Errorf("another implementation's Service being deleted was cleaned up: finalizers %v, status %+v", s.Finalizers, s.Status.LoadBalancer)
	}
	bal.mu.Lock()
	if _, ok := bal.ips["mine"]; len(bal.ips) != 1 || !ok || len(bal.deleted) != 0 {
		t.Errorf("the provider was called for Services not served: ensured %v, deleted %v", bal.ips, bal.deleted)
	}
	bal.mu.Unlock()

	// A change of type clears the class in the same update: still ours.
	s := get("mine")
	s.Spec.Type = v1.ServiceTypeClusterIP
	s.Spec.LoadBalancerClass = nil
	if _, err := cs.CoreV1().Services("ns").Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("mine cleaned up", func() bool {
		s := get("mine")
		return bal.wasDeleted("mine") && !servicehelper.HasLBFinalizer(s) && len(s.Status.LoadBalancer.Ingress) == 0
	})

	l, err := cs.CoreV1().Events("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var about []string
	for _, e := range l.Items {
		about = append(about, e.InvolvedObject.Name)
	}
	for _, name := range []string{"other", "others-deleting", "classless"} {
		if slices.Contains(about, name) {
			t.Errorf("an Event about %s, a Service not served (Events about %v)", name, about)
		}
	}
}
