package framework

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// ServiceCondition is the condition of type typ on svc, if it has one.
func ServiceCondition(svc *v1.Service, typ string) (metav1.Condition, bool) {
	for _, c := range svc.Status.Conditions {
		if c.Type == typ {
			return c, true
		}
	}
	return metav1.Condition{}, false
}

// WaitServiceCondition waits up to timeout until the Service ns/name has the
// condition typ with status and reason, and returns the Service; it fails the
// test with the last condition seen otherwise.
func WaitServiceCondition(t testing.TB, cs kubernetes.Interface, ns, name, typ string, status metav1.ConditionStatus, reason string, timeout time.Duration) *v1.Service {
	t.Helper()
	var last *v1.Service
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		svc, err := cs.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // keep polling
		}
		last = svc
		c, ok := ServiceCondition(svc, typ)
		return ok && c.Status == status && c.Reason == reason, nil
	})
	if err != nil {
		var got any = "no Service"
		if last != nil {
			got = last.Status.Conditions
		}
		t.Fatalf("Service %s/%s: no %s=%s (%s) within %s; conditions: %+v", ns, name, typ, status, reason, timeout, got)
	}
	return last
}

// APIServerRequests is the sum of the API server's apiserver_request_total
// series whose labels contain every one of want (e.g. `verb="PATCH"`),
// read from its /metrics as the admin: a count of requests as the API
// server saw them.
func APIServerRequests(ctx context.Context, cs kubernetes.Interface, want ...string) (float64, error) {
	body, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, fmt.Errorf("API server metrics: %w", err)
	}
	sum := 0.0
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		labels, value, ok := strings.Cut(line[len("apiserver_request_total{"):], "} ")
		if !ok || !containsAll(labels, want) {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return 0, fmt.Errorf("API server metrics: %q: %w", line, err)
		}
		sum += v
	}
	return sum, sc.Err()
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
