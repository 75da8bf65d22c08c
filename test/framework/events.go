package framework

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// WaitObjectEvent waits up to timeout for an Event with reason on the object
// ns/name (any kind), and fails the test without one.
func WaitObjectEvent(t testing.TB, cs kubernetes.Interface, ns, name, reason string, timeout time.Duration) v1.Event {
	t.Helper()
	var found v1.Event
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		evs, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
		if err != nil {
			return false, nil //nolint:nilerr // keep polling
		}
		for _, e := range evs.Items {
			if e.Reason == reason {
				found = e
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no %s Event on %s/%s within %s", reason, ns, name, timeout)
	}
	return found
}
