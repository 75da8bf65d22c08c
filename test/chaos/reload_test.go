package chaos

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

const (
	reloadPools = "  - {name: default, addresses: [198.18.68.0/22]}\n"
	extraPool   = "  - {name: extra, autoAssign: false, addresses: [198.18.65.0/24]}\n"
	badPools    = "  - {name: default, addresses: [not-a-range]}\n"
)

// inPool is a Service of ns that asks for an address of pool.
func inPool(ns, name, pool string) *v1.Service {
	return framework.LoadBalancerService(ns, name, framework.WithoutNodePorts, framework.WithAnnotation("metal-ccm.io/pool", pool))
}

// metricsShow waits until every running replica's /metrics has every line,
// and returns how long that took.
func metricsShow(ctx context.Context, rs *replicaSet, lines ...string) (time.Duration, error) {
	return waitUntil(ctx, fmt.Sprintf("every replica's metrics show %v", lines), func() bool {
		for i := range rs.size() {
			m, err := cp.Metrics(ctx, rs.proc(i))
			if err != nil {
				return false
			}
			for _, l := range lines {
				if !strings.Contains(m, l) {
					return false
				}
			}
		}
		return true
	})
}

// TestChaosConfigReload changes the cloud-config file of three running
// replicas in the middle of a Service storm, as a ConfigMap update does: a
// new pool applies without a restart; then an invalid config is refused with
// a log line and metrics, and the config before it goes on working.
func TestChaosConfigReload(t *testing.T) {
	ns := "chaos-reload"
	ctx, rs, tr := setup(t, ns, 3, reloadPools, steadyLease)
	pids := make([]int, rs.size())
	for i := range pids {
		pids[i] = rs.proc(i).PID()
	}
	n := prof.apiServices
	st := startStorm(ctx, ns, "l", n, 20*time.Second)

	valid := result{fault: "config reload: a new pool, mid-storm", requests: -1, injected: 1,
		scale: fmt.Sprintf("%d Services, 3 replicas", n), note: "applied without a restart (allocated, and announced with the router lab)"}
	if err := createService(ctx, inPool(ns, "wants-extra", "extra")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // refused for an unknown pool meanwhile
	if err := rs.rewriteConfigs(reloadPools + extraPool); err != nil {
		t.Fatal(err)
	}
	written := time.Now()
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	defer wcancel()
	if _, err := waitUntil(wctx, "the waiting Service gets an address of the new pool", func() bool {
		return strings.HasPrefix(tr.firstIP("wants-extra"), "198.18.65.")
	}); err != nil {
		t.Error(err)
	} else {
		valid.recovery = append(valid.recovery, time.Since(written))
		valid.survived = 1
		// The replicas announce the new pool's address without a restart.
		if lab != nil {
			a := netip.MustParseAddr(tr.firstIP("wants-extra"))
			if err := lab.WaitRoute(wctx, netlab.HostPrefix(a), lab.NodeAddrs(netlab.IPv4)); err != nil {
				t.Errorf("the new pool's address is not announced after the reload: %v", err)
				valid.survived = 0
			}
		}
	}
	if _, err := metricsShow(wctx, rs, `metal_ccm_config_reloads_total{result="success"} 1`, "metal_ccm_config_last_reload_successful 1"); err != nil {
		t.Error(err)
		valid.survived = 0
	}
	t.Logf("new pool in use %v after the files changed", valid.recovery)

	invalid := result{fault: "config reload: an invalid config, mid-storm", requests: -1, injected: 1,
		scale: "3 replicas", note: "refused (log line, metrics); the previous config goes on"}
	if err := rs.rewriteConfigs(badPools); err != nil {
		t.Fatal(err)
	}
	refused, err := metricsShow(wctx, rs, `metal_ccm_config_reloads_total{result="failure"} 1`, "metal_ccm_config_last_reload_successful 0")
	if err != nil {
		t.Error(err)
	} else {
		invalid.recovery = append(invalid.recovery, refused)
	}
	for i := range rs.size() {
		if !rs.proc(i).LogContains("refused the changed cloud config") {
			t.Errorf("replica %d logged no refusal", i)
		}
	}
	if err := createService(ctx, inPool(ns, "after-invalid", "extra")); err != nil {
		t.Fatal(err)
	}
	if _, err := waitUntil(wctx, "a Service of the new pool after the invalid config", func() bool {
		return strings.HasPrefix(tr.firstIP("after-invalid"), "198.18.65.")
	}); err != nil {
		t.Error(err)
	} else if refused > 0 {
		invalid.survived = 1
	}

	st.wait(t)
	if err := tr.waitAssigned(wctx, n+2); err != nil {
		t.Errorf("after the storm: %v", err)
	}
	for i, pid := range pids {
		if c := rs.proc(i); c.Exited() || c.PID() != pid {
			t.Errorf("replica %d restarted or exited", i)
			valid.survived, invalid.survived = 0, 0
		}
	}
	// Valid again, so that the replicas release the Services at the end.
	if err := rs.rewriteConfigs(reloadPools + extraPool); err != nil {
		t.Fatal(err)
	}
	var res result
	checkFinal(ctx, t, tr, ns, n+2, &res)
	valid.duplicates, valid.changed = res.duplicates, res.changed
	invalid.duplicates, invalid.changed = res.duplicates, res.changed
	valid.pass = valid.survived == 1 && res.pass
	invalid.pass = invalid.survived == 1 && res.pass
	record(valid)
	record(invalid)
}
