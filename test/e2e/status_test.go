package e2e

import (
	"context"
	"fmt"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/metal-ccm/metal-ccm/pkg/annotation"
	"github.com/metal-ccm/metal-ccm/pkg/sessions"
	"github.com/metal-ccm/metal-ccm/pkg/svcstatus"
	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// statusConfig is replica 0's config with a one-address pool "tiny" (not
// auto-assigned) and the given serviceStatus.minInterval.
func statusConfig(lab *netlab.Lab, minInterval string) string {
	body := lab.CloudConfig(0, "198.18.105.0/24", "2001:db8:105::/120")
	body = strings.Replace(body, "  pools:\n", "  pools:\n  - name: tiny\n    addresses: [198.18.106.1/32]\n    autoAssign: false\n", 1)
	// The test's nodes run no kube-proxy, and the storm's have addresses
	// that lead nowhere: no health checks (the rewritten file keeps them off).
	return body + "healthChecks:\n  enabled: false\nserviceStatus:\n  minInterval: " + minInterval + "\n  writesPerSecond: 50\n"
}

// TestServiceStatus checks the conditions and summary the leader writes on
// each Service, for each cause (a real BGP session with BIRD, nodes that
// come and go, a pool that runs out), and that a 1,000-node join storm
// and node churn cost each Service at most one write per minInterval.
func TestServiceStatus(t *testing.T) {
	lab := netlab.New(t, netlab.Options{Nodes: 3, Speakers: 1})
	registerLabNodes(t, lab)
	cfgPath := filepath.Join(t.TempDir(), "cloud-config.yaml")
	if err := os.WriteFile(cfgPath, []byte(statusConfig(lab, "1s")), 0o600); err != nil {
		t.Fatal(err)
	}
	// The replica's sessions Lease (kubectl metal-ccm status), once it stopped.
	t.Cleanup(func() {
		_ = client.CoordinationV1().Leases(metav1.NamespaceSystem).Delete(context.Background(), sessions.LeaseName("ccm-status"), metav1.DeleteOptions{})
	})
	ccm := cp.StartCCMForTest(t, framework.CCMOptions{
		Name: "ccm-status", CloudConfig: cfgPath,
		Args: []string{"--leader-elect-resource-name", "ccm-status", "--leader-elect-lease-duration", "4s",
			"--leader-elect-renew-deadline", "3s", "--leader-elect-retry-period", "500ms"},
		// As in its pod: it publishes its sessions (kubectl metal-ccm status).
		Env: []string{"POD_NAMESPACE=" + metav1.NamespaceSystem, "POD_NAME=ccm-status"},
	})
	ns := framework.NewNamespace(t, client, framework.NamespaceName(t))
	waitEstablished(t, lab, time.Minute, lab.SpeakerAddrs(netlab.IPv4)[0], lab.SpeakerAddrs(netlab.IPv6)[0])
	const (
		allocated = svcstatus.TypeAllocated
		announced = svcstatus.TypeAnnounced
		wait      = 30 * time.Second
	)
	nodes := []string{lab.NodeName(0), lab.NodeName(1), lab.NodeName(2)}

	framework.CreateLoadBalancer(t, client, ns, "web")
	vip := waitVIPs(t, ns, "web", 1)[0]
	waitRoute(t, lab, vip, lab.NodeAddrs(netlab.IPv4)...)

	t.Run("announced: who carries it, to which peer", func(t *testing.T) {
		svc := framework.WaitServiceCondition(t, client, ns, "web", announced, metav1.ConditionTrue, svcstatus.ReasonAnnounced, wait)
		want := fmt.Sprintf("%s BGP via 3 nodes (%s) to 1/1 peers up (%s)", vip, strings.Join(nodes, ","), netlab.RouterAddr(netlab.IPv4))
		if got := svc.Annotations[annotation.Summary]; got != want {
			t.Errorf("summary %q, want %q", got, want)
		}
		c, _ := framework.ServiceCondition(svc, allocated)
		if c.Status != metav1.ConditionTrue || c.Message != vip.String()+" from pool default" {
			t.Errorf("allocated: %+v", c)
		}
		framework.WaitObjectEvent(t, client, ns, "web", svcstatus.ReasonAnnouncementChanged, wait)
	})

	t.Run("kubectl metal-ccm status shows the sessions with the router", func(t *testing.T) {
		testStatusCommand(t, cfgPath)
	})

	t.Run("no eligible node, then back", func(t *testing.T) {
		for _, n := range nodes {
			setReady(t, n, false)
		}
		svc := framework.WaitServiceCondition(t, client, ns, "web", announced, metav1.ConditionFalse, svcstatus.ReasonNoEligibleNode, wait)
		if got := svc.Annotations[annotation.Summary]; !strings.Contains(got, "via 0 nodes") {
			t.Errorf("summary %q", got)
		}
		waitRoute(t, lab, vip)
		setReady(t, nodes[1], true)
		svc = framework.WaitServiceCondition(t, client, ns, "web", announced, metav1.ConditionTrue, svcstatus.ReasonAnnounced, wait)
		if got := svc.Annotations[annotation.Summary]; !strings.Contains(got, "via 1 node ("+nodes[1]+")") {
			t.Errorf("summary %q", got)
		}
		setReady(t, nodes[0], true)
		setReady(t, nodes[2], true)
		waitRoute(t, lab, vip, lab.NodeAddrs(netlab.IPv4)...)
	})

	t.Run("all sessions down in the router, then up", func(t *testing.T) {
		for _, f := range []netlab.Family{netlab.IPv4, netlab.IPv6} {
			if _, err := lab.Birdc("disable", netlab.ProtocolName(f, 0)); err != nil {
				t.Fatal(err)
			}
		}
		svc := framework.WaitServiceCondition(t, client, ns, "web", announced, metav1.ConditionFalse, svcstatus.ReasonNoSessionUp, wait)
		if got := svc.Annotations[annotation.Summary]; !strings.Contains(got, "to 0/1 peers up") {
			t.Errorf("summary %q", got)
		}
		for _, f := range []netlab.Family{netlab.IPv4, netlab.IPv6} {
			if _, err := lab.Birdc("enable", netlab.ProtocolName(f, 0)); err != nil {
				t.Fatal(err)
			}
		}
		framework.WaitServiceCondition(t, client, ns, "web", announced, metav1.ConditionTrue, svcstatus.ReasonAnnounced, time.Minute)
		waitRoute(t, lab, vip, lab.NodeAddrs(netlab.IPv4)...)
	})

	t.Run("pool exhausted, then freed", func(t *testing.T) {
		tiny := framework.WithAnnotation("metal-ccm.io/pool", "tiny")
		framework.CreateLoadBalancer(t, client, ns, "first", tiny)
		waitVIPs(t, ns, "first", 1)
		framework.CreateLoadBalancer(t, client, ns, "second", tiny)
		svc := framework.WaitServiceCondition(t, client, ns, "second", allocated, metav1.ConditionFalse, "PoolExhausted", wait)
		if c, _ := framework.ServiceCondition(svc, announced); c.Reason != svcstatus.ReasonNoAddress {
			t.Errorf("announced of a Service without address: %+v", c)
		}
		if err := client.CoreV1().Services(ns).Delete(context.Background(), "first", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		framework.WaitServiceCondition(t, client, ns, "second", allocated, metav1.ConditionTrue, svcstatus.ReasonAllocated, wait)
		framework.WaitServiceCondition(t, client, ns, "second", announced, metav1.ConditionTrue, svcstatus.ReasonAnnounced, wait)
	})

	t.Run("a join storm and node churn are coalesced", func(t *testing.T) {
		testStatusWritesBound(t, lab, ccm, ns, cfgPath)
	})
}

// testStatusCommand checks that `kubectl metal-ccm status` shows the
// replica's two sessions with BIRD established (its sessions' Lease,
// written within a minute), the leader and the pool in use.
func testStatusCommand(t *testing.T, cfgPath string) {
	ctx := context.Background()
	ns := metav1.NamespaceSystem
	t.Cleanup(func() {
		_ = client.CoreV1().ConfigMaps(ns).Delete(context.Background(), framework.CloudConfigMapName, metav1.DeleteOptions{})
	})
	if err := framework.CreateCloudConfigMap(ctx, client, ns, cfgPath); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range []netlab.Family{netlab.IPv4, netlab.IPv6} {
		want = append(want, `(?m)^  replica/ccm-status +- +- +`+regexp.QuoteMeta(netlab.RouterAddr(f).String())+` +established +- +\S+$`) // no BFD: "-", then the age
	}
	want = append(want, `(?m)^Leader: +\S+_`, `BGP from Replicas to 2 peers`, `(?m)^  default +IPv4 +1 +255 +256 +BGP`)
	cp.WaitStatus(t, []string{"-n", ns, "--lease-name", "ccm-status"}, want...)
}

// testStatusWritesBound counts, at the API server, the status writes a
// 1,000-node join storm and node churn cause on ten Services, with
// serviceStatus.minInterval 20s: at most 1 + ceil(D / 20 s) per Service
// over the D seconds from the storm's start to the last write, where one
// write per node change and Service would be thousands.
func testStatusWritesBound(t *testing.T, lab *netlab.Lab, ccm *framework.CCM, ns, cfgPath string) {
	const (
		services    = 10
		joins       = 1000
		churn       = 100 // nodes turned NotReady, and as many deleted
		minInterval = 20 * time.Second
	)
	ctx := context.Background()
	for i := range services {
		framework.CreateLoadBalancer(t, client, ns, fmt.Sprintf("storm-%d", i))
	}
	for i := range services {
		framework.WaitServiceCondition(t, client, ns, fmt.Sprintf("storm-%d", i), svcstatus.TypeAnnounced, metav1.ConditionTrue, svcstatus.ReasonAnnounced, time.Minute)
	}
	before, err := cp.Metrics(ctx, ccm)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, []byte(statusConfig(lab, minInterval.String())), 0o600); err != nil {
		t.Fatal(err)
	}
	// The reload shows as a success in the replica's metrics.
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		m, err := cp.Metrics(ctx, ccm)
		return err == nil && promValue(m, `metal_ccm_config_reloads_total{result="success"}`) > promValue(before, `metal_ccm_config_reloads_total{result="success"}`), nil
	}); err != nil {
		t.Fatal("the new minInterval was not loaded")
	}
	// Writes only land after a round's wait for the previous ones: let the
	// last round of the old interval pass.
	time.Sleep(2 * time.Second)
	statusPatches := func() float64 {
		n, err := framework.APIServerRequests(ctx, client, `resource="services"`, `subresource="status"`, `verb="PATCH"`)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	start, w0 := time.Now(), statusPatches()
	all, err := client.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	served := len(all.Items) // the storm's and the earlier subtests'

	names := make([]string, joins)
	for i := range names {
		names[i] = fmt.Sprintf("storm-node-%04d", i)
	}
	t.Cleanup(func() {
		// Some were deleted by the churn already: errors are expected.
		_ = parallelDo(names, func(n string) error {
			return client.CoreV1().Nodes().Delete(context.Background(), n, metav1.DeleteOptions{})
		})
	})
	ips := map[string]string{}
	a := netip.MustParseAddr("198.18.40.1")
	for _, n := range names {
		ips[n] = a.String()
		a = a.Next()
	}
	if err := parallelDo(names, func(n string) error {
		_, err := framework.CreateReadyNode(ctx, client, n, ips[n])
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := parallelDo(names[:churn], func(n string) error { return framework.SetNodeReady(ctx, client, n, false) }); err != nil {
		t.Fatal(err)
	}
	if err := parallelDo(names[churn:2*churn], func(n string) error {
		return client.CoreV1().Nodes().Delete(ctx, n, metav1.DeleteOptions{})
	}); err != nil {
		t.Fatal(err)
	}
	// Every Service ends up showing its 16 next hops (bgp.maxPathsPerAddress).
	for i := range services {
		name := fmt.Sprintf("storm-%d", i)
		if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*minInterval, true, func(ctx context.Context) (bool, error) {
			svc, err := client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
			return err == nil && strings.Contains(svc.Annotations[annotation.Summary], "via 16 nodes"), nil
		}); err != nil {
			t.Fatalf("Service %s does not show its 16 next hops", name)
		}
	}
	// Settled: no write for a whole minInterval.
	last := statusPatches()
	lastAt := time.Now()
	for time.Since(lastAt) < minInterval+3*time.Second {
		time.Sleep(time.Second)
		if n := statusPatches(); n != last {
			last, lastAt = n, time.Now()
		}
	}
	d := lastAt.Sub(start)
	writes := last - w0
	bound := float64(served) * (1 + math.Ceil(d.Seconds()/minInterval.Seconds()))
	t.Logf("%d node joins, %d NotReady, %d deletions over %s: %v status writes to %d Services (bound %v)", joins, churn, churn, d.Round(time.Second), writes, served, bound)
	if writes < services {
		t.Errorf("%v status writes: each of the %d Services should have been written", writes, services)
	}
	if writes > bound {
		t.Errorf("%v status writes, more than the bound %v", writes, bound)
	}
}

// parallelDo runs fn on every name, eight at a time, and returns the first
// error.
func parallelDo(names []string, fn func(string) error) error {
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	work := make(chan string)
	for range 8 {
		wg.Go(func() {
			for n := range work {
				if err := fn(n); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for _, n := range names {
		work <- n
	}
	close(work)
	wg.Wait()
	return first
}

// promValue is the value of the series line that starts with series, or 0.
func promValue(text, series string) float64 {
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			var v float64
			_, _ = fmt.Sscanf(rest, "%g", &v)
			return v
		}
	}
	return 0
}
