package integration

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metal-ccm/metal-ccm/test/framework"
)

// TestNodeChangesCostTheServiceControllerNothing checks that node joins,
// readiness changes and deletions make the service controller sync no
// Service (upstream's node sync is O(Services x nodes) per node event, and
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

	before := settledSyncs(t, ccm)

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
	if after := settledSyncs(t, ccm); after != before {
		t.Errorf("node changes caused %v Service syncs", after-before)
	}

	// A Service created after the node changes is served as before.
	waitIPs(t, ns, createLB(t, ns, "after").Name, 1, 20*time.Second)
	names = append(names, "after")
	for _, n := range names {
		evs, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + n})
		if err != nil {
			t.Fatal(err)
		}
		ensured := 0
		for _, e := range evs.Items {
			switch e.Reason {
			case "UpdatedLoadBalancer":
				t.Errorf("Service %s got a %s Event %q from %s", n, e.Reason, e.Message, e.Source.Component)
			case "EnsuredLoadBalancer":
				ensured += int(e.Count)
			}
		}
		if ensured != 1 {
			t.Errorf("Service %s got %d EnsuredLoadBalancer Events, want 1", n, ensured)
		}
		if s, err := client.CoreV1().Services(ns).Get(ctx, n, metav1.GetOptions{}); err != nil || len(s.Status.LoadBalancer.Ingress) != 1 {
			t.Errorf("Service %s lost its address: %v %+v", n, err, s.Status.LoadBalancer)
		}
	}
}

// settledSyncs waits until the replica's count of Service syncs has not
// moved for two seconds, and returns it.
func settledSyncs(t *testing.T, c *framework.CCM) float64 {
	t.Helper()
	const metric = "metal_ccm_service_syncs_total"
	last, same := -1.0, 0
	for range 60 {
		m, err := cp.Metrics(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		v, ok := framework.MetricValue(m, metric)
		if !ok {
			t.Fatalf("no %s in the metrics", metric)
		}
		if v == last {
			if same++; same == 4 {
				return v
			}
		} else {
			last, same = v, 0
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("%s did not settle (last %v)", metric, last)
	return 0
}
