package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metal-ccm/metal-ccm/test/framework"
)

// TestNodeChangesCostTheServiceControllerNothing checks that node joins,
// readiness changes and deletions do not make the service controller sync
// every Service (its node sync is O(Services x nodes) per node event, and
// records an Event per Service): the announcer follows nodes by itself.
// Services are still given addresses, before and after the node changes.
func TestNodeChangesCostTheServiceControllerNothing(t *testing.T) {
	ccm := startCCM(t, framework.CCMOptions{CloudConfig: writeConfig(t, lbConfig(160))})
	ns := newNamespace(t)
	var names []string
	for _, n := range []string{"a", "b", "c"} {
		names = append(names, createLB(t, ns, n).Name)
	}
	for _, n := range names {
		waitIPs(t, ns, n, 1, 20*time.Second)
	}

	// Nodes join (and are initialized), one turns NotReady, one is deleted.
	ctx := context.Background()
	registerNode(t, "svcnodes-a", true, "198.18.162.100")
	registerNode(t, "svcnodes-b", true, "198.18.162.101")
	registerNode(t, "svcnodes-c", true, "198.18.162.102")
	for _, n := range []string{"svcnodes-a", "svcnodes-b", "svcnodes-c"} {
		waitInitialized(t, n, 30*time.Second)
	}
	if err := framework.SetNodeReady(ctx, client, "svcnodes-b", false); err != nil {
		t.Fatal(err)
	}
	if err := client.CoreV1().Nodes().Delete(ctx, "svcnodes-c", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// A Service created after the node changes is served as before.
	waitIPs(t, ns, createLB(t, ns, "after").Name, 1, 20*time.Second)
	names = append(names, "after")

	// Give a node sync, if one were queued, the time to run (it runs within
	// a second of a node event).
	time.Sleep(3 * time.Second)
	m, err := cp.Metrics(ctx, ccm)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"service_controller_nodesync_latency_seconds_count 0", "service_controller_loadbalancer_sync_total 0"} {
		if !strings.Contains(m, line+"\n") {
			t.Errorf("metrics lack %q: the service controller synced nodes:\n%s", line, grepLines(m, "service_controller_"))
		}
	}
	for _, n := range names {
		evs, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + n})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs.Items {
			if e.Reason == "UpdatedLoadBalancer" {
				t.Errorf("Service %s got a %s Event %q from %s", n, e.Reason, e.Message, e.Source.Component)
			}
		}
		if s, err := client.CoreV1().Services(ns).Get(ctx, n, metav1.GetOptions{}); err != nil || len(s.Status.LoadBalancer.Ingress) != 1 {
			t.Errorf("Service %s lost its address: %v %+v", n, err, s.Status.LoadBalancer)
		}
	}
}

// grepLines keeps the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
