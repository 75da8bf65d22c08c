package framework

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// CreateStatefulSet creates a one-replica StatefulSet name (pods labelled
// app=name) of image (test/images' echo: it serves 8080) and its headless
// Service. A StatefulSet keeps at most one pod per ordinal: its pod on a
// dead node is replaced only once Kubernetes has proof that the old one is
// gone (the kubelet's word, or the node out of service), volume or not.
func CreateStatefulSet(t testing.TB, cs kubernetes.Interface, ns, name, image string) {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{"app": name}
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.ServiceSpec{
		ClusterIP: v1.ClusterIPNone, Selector: labels,
		Ports: []v1.ServicePort{{Name: "http", Port: 8080, TargetPort: intstr.FromInt32(8080)}},
	}}
	if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To[int32](1),
			ServiceName: name,
			Selector:    &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: v1.PodSpec{
				AutomountServiceAccountToken: ptr.To(false),
				Containers: []v1.Container{{
					Name:            "echo",
					Image:           image,
					ImagePullPolicy: v1.PullNever,
					Ports:           []v1.ContainerPort{{ContainerPort: 8080}},
					ReadinessProbe: &v1.Probe{PeriodSeconds: 1, ProbeHandler: v1.ProbeHandler{
						HTTPGet: &v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)},
					}},
				}},
			}},
		},
	}
	if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// RunningOn is the node of pod name when it runs, is Ready and is not being
// deleted, else "".
func RunningOn(ctx context.Context, cs kubernetes.Interface, ns, name string) string {
	p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil || p.DeletionTimestamp != nil || p.Status.Phase != v1.PodRunning {
		return ""
	}
	if !slices.ContainsFunc(p.Status.Conditions, func(c v1.PodCondition) bool {
		return c.Type == v1.PodReady && c.Status == v1.ConditionTrue
	}) {
		return ""
	}
	return p.Spec.NodeName
}

// WaitRunning waits until pod name runs and is Ready, and returns its node.
func WaitRunning(t testing.TB, cs kubernetes.Interface, ns, name string, timeout time.Duration) string {
	t.Helper()
	var node string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		node = RunningOn(ctx, cs, ns, name)
		return node != "", nil
	})
	if err != nil {
		p, _ := cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		state := "absent"
		if p != nil && p.Name != "" {
			state = fmt.Sprintf("on %q: %s %v", p.Spec.NodeName, p.Status.Phase, p.Status.Conditions)
		}
		t.Fatalf("pod %s/%s not Running and Ready within %s: %s", ns, name, timeout, state)
	}
	return node
}
