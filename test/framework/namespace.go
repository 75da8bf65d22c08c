package framework

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// NamespaceName is a namespace name for test t: its name in lower case,
// "/" and "_" as "-", at most 50 characters.
func NamespaceName(t testing.TB) string {
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 50 {
		name = name[:50]
	}
	return strings.TrimRight(name, "-")
}

// NamespaceOption shapes what NewNamespace does at the end of the test.
type NamespaceOption func(*namespaceOptions)

type namespaceOptions struct {
	release time.Duration
}

// ReleaseServices makes NewNamespace's cleanup delete the namespace's
// Services first and wait, up to timeout, until the running CCM has released
// them (their finalizers gone); a Service left after that fails the test.
// The cleanup must run while the CCM still runs: create the namespace after
// starting the CCM, as t.Cleanup runs last-registered first.
func ReleaseServices(timeout time.Duration) NamespaceOption {
	return func(o *namespaceOptions) { o.release = timeout }
}

// NewNamespace creates namespace name for test t, failing it on error, and
// deletes the namespace when the test ends (without waiting for it to go).
func NewNamespace(t testing.TB, cs kubernetes.Interface, name string, opts ...NamespaceOption) string {
	t.Helper()
	var o namespaceOptions
	for _, opt := range opts {
		opt(&o)
	}
	if err := createNamespace(context.Background(), cs, name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		if o.release > 0 {
			releaseServices(ctx, t, cs, name, o.release)
		}
		_ = cs.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
	})
	return name
}

// ReleaseAtEnd is ReleaseServices for a namespace made before the CCM
// started (to hold what the CCM must find at its start): called after
// starting the CCM, its cleanup runs while the CCM still runs.
func ReleaseAtEnd(t testing.TB, cs kubernetes.Interface, name string, timeout time.Duration) {
	t.Cleanup(func() { releaseServices(context.Background(), t, cs, name, timeout) })
}

// releaseServices deletes the namespace's Services and waits, up to
// timeout, until they are gone (released by the CCM).
func releaseServices(ctx context.Context, t testing.TB, cs kubernetes.Interface, name string, timeout time.Duration) {
	deleteServices(ctx, t, cs, name)
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		l, err := cs.CoreV1().Services(name).List(ctx, metav1.ListOptions{})
		return err == nil && len(l.Items) == 0, nil
	})
	if err != nil {
		t.Errorf("the Services of %s were not released: %v", name, err)
	}
}

// EnsureNamespace creates namespace name unless it exists.
func EnsureNamespace(ctx context.Context, cs kubernetes.Interface, name string) error {
	if err := createNamespace(ctx, cs, name); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

func createNamespace(ctx context.Context, cs kubernetes.Interface, name string) error {
	_, err := cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("namespace %s: %w", name, err)
	}
	return nil
}

// deleteServices deletes every Service of a namespace, 8 at a time
// (Services have no delete-collection), and logs what failed.
func deleteServices(ctx context.Context, t testing.TB, cs kubernetes.Interface, ns string) {
	l, err := cs.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Logf("list the Services of %s: %v", ns, err)
		return
	}
	names := make(chan string)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for n := range names {
				if err := cs.CoreV1().Services(ns).Delete(ctx, n, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					t.Logf("delete %s/%s: %v", ns, n, err)
				}
			}
		})
	}
	for _, s := range l.Items {
		names <- s.Name
	}
	close(names)
	wg.Wait()
}
