package integration

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/test/framework"
)

// TestConfigReload changes the mounted cloud-config under a running CCM: a
// valid change applies without a restart, an invalid one is refused and the
// old config goes on.
func TestConfigReload(t *testing.T) {
	before := `loadBalancer:
  pools:
  - {name: first, addresses: [198.18.130.0/29]}
`
	path := writeConfig(t, before)
	ccm := startCCM(t, framework.CCMOptions{CloudConfig: path})
	ns := newNamespace(t)
	waitIPs(t, ns, createLB(t, ns, "in-first").Name, 1, 20*time.Second)
	createLB(t, ns, "wants-second", framework.WithAnnotation("metal-ccm.io/pool", "second"))
	waitEvent(t, ns, "wants-second", "UnknownPool")
	time.Sleep(6 * time.Second) // past the service controller's first retry

	// A valid change: a new pool. The waiting Service gets an address at once.
	write := func(body string) {
		t.Helper()
		// healthChecks as at the start: turning them on takes a restart.
		if err := os.WriteFile(path, []byte("apiVersion: metal-ccm.io/v1alpha1\nkind: CloudConfig\nhealthChecks:\n  enabled: false\n"+body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(before + "  - {name: second, addresses: [198.18.131.0/29]}\n")
	start := time.Now()
	ips := waitIPs(t, ns, "wants-second", 1, 10*time.Second)
	if !strings.HasPrefix(ips[0], "198.18.131.") {
		t.Errorf("address %v not from the new pool", ips)
	}
	t.Logf("new pool used %s after the file changed", time.Since(start).Round(time.Millisecond))
	metricIs(t, ccm, `metal_ccm_config_reloads_total{result="success"} 1`, `metal_ccm_config_last_reload_successful 1`)

	// An invalid change is refused; the running config goes on.
	write("loadBalancer:\n  pools:\n  - {name: first, addresses: [not-a-range]}\n")
	metricIs(t, ccm, `metal_ccm_config_reloads_total{result="failure"} 1`, `metal_ccm_config_last_reload_successful 0`)
	if !strings.Contains(ccm.Log(), "Refused the changed cloud config") {
		t.Error("no log line for the refused config")
	}
	got := waitIPs(t, ns, createLB(t, ns, "after-bad", framework.WithAnnotation("metal-ccm.io/pool", "second")).Name, 1, 20*time.Second)
	if !strings.HasPrefix(got[0], "198.18.131.") {
		t.Errorf("old config not in force after a refused reload: %v", got)
	}
	if ccm.Exited() {
		t.Error("the CCM exited")
	}
}

// metricIs waits until the replica's /metrics has every line.
func metricIs(t *testing.T, c *framework.CCM, lines ...string) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		m, err := cp.Metrics(ctx, c)
		if err != nil {
			return false, nil //nolint:nilerr // keep polling
		}
		last = m
		for _, l := range lines {
			if !strings.Contains(m, l) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		for _, l := range lines {
			if !strings.Contains(last, l) {
				t.Errorf("/metrics lacks %s", l)
			}
		}
	}
}

// TestConfigRestart changes a field the replicas read only at start
// (healthChecks) under a running CCM: it stops cleanly by itself, within
// config.RestartSpread and its stop, to be started again by its pod's
// restart policy; started again, it runs with the new config.
func TestConfigRestart(t *testing.T) {
	body := "loadBalancer:\n  pools:\n  - {name: first, addresses: [198.18.132.0/29]}\n"
	path := writeConfig(t, body+"healthChecks:\n  enabled: false\n")
	ccm := startCCM(t, framework.CCMOptions{CloudConfig: path})
	metricIs(t, ccm, `metal_ccm_config_last_reload_successful 1`)
	changed := time.Now()
	if err := os.WriteFile(path, []byte("apiVersion: metal-ccm.io/v1alpha1\nkind: CloudConfig\n"+body+"healthChecks:\n  enabled: false\n  interval: 3s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	deadline := changed.Add(config.RestartSpread + 20*time.Second)
	for !ccm.Exited() {
		if time.Now().After(deadline) {
			t.Fatalf("the CCM runs on %s after a change of healthChecks", time.Since(changed).Round(time.Second))
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("the CCM stopped %s after the change", time.Since(changed).Round(100*time.Millisecond))
	log := ccm.Log()
	for _, want := range []string{"The changed config takes a restart", "Stopping to start again with the changed config", "healthChecks"} {
		if !strings.Contains(log, want) {
			t.Errorf("the CCM's log lacks %q", want)
		}
	}
	again := startCCM(t, framework.CCMOptions{Name: "ccm-config-restart-2", CloudConfig: path})
	metricIs(t, again, `metal_ccm_config_last_reload_successful 1`)
	time.Sleep(2 * config.WatchInterval)
	if again.Exited() {
		t.Error("started again with the changed config, the CCM stopped again")
	}
}
