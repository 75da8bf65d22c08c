package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// Leader election of the fast replica sets: a dead leader is replaced within
// about lease + retry.
var fastLease = []string{"--leader-elect-lease-duration", "4s", "--leader-elect-renew-deadline", "3s",
	"--leader-elect-retry-period", "500ms"}

// Leader election of the replica sets whose tests never kill a leader:
// upstream's lease and renew deadline, so that a leader does not exit
// because a loaded machine stalled its Lease updates for 3 s (a fast lease's
// renew deadline), with the fast retry period, so that a leader stopped by
// SIGTERM (which empties the Lease) is replaced as fast.
var steadyLease = []string{"--leader-elect-lease-duration", "15s", "--leader-elect-renew-deadline", "10s",
	"--leader-elect-retry-period", "500ms"}

// grRestartTime is how long the router keeps the routes of a speaker whose
// session dropped without a goodbye (BGP graceful restart).
const grRestartTime = 15 * time.Second

// replicaSet runs CCM replicas of one lease. Replica i always uses the lab's
// speaker address i and its own TCP proxy to the API server, so that it can
// be cut off alone. Each start of a replica is a new process with a log of
// its own.
type replicaSet struct {
	t       *testing.T
	lease   string
	args    []string
	dir     string
	proxies []*framework.TCPProxy
	kubecfg []string

	mu      sync.Mutex
	cfgBody string
	procs   []*framework.CCM // the running process of each replica
	starts  []int
	all     []*framework.CCM // every process, for the final log checks
}

// newReplicaSet starts n replicas with the pools of poolsYAML (the items of
// loadBalancer.pools) and args.
func newReplicaSet(t *testing.T, lease string, n int, poolsYAML string, args []string) *replicaSet {
	t.Helper()
	rs := &replicaSet{t: t, lease: lease, args: args, dir: t.TempDir(), cfgBody: poolsYAML,
		procs: make([]*framework.CCM, n), starts: make([]int, n)}
	t.Cleanup(rs.stopAll)
	for i := range n {
		p, err := framework.StartTCPProxy(cp.APIServerAddr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
		kc := filepath.Join(rs.dir, fmt.Sprintf("kubeconfig-%d", i))
		if err := cp.ProxiedKubeconfig(kc, p.Addr); err != nil {
			t.Fatal(err)
		}
		rs.proxies = append(rs.proxies, p)
		rs.kubecfg = append(rs.kubecfg, kc)
		if err := rs.writeConfig(i, poolsYAML); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		if _, err := rs.start(i); err != nil {
			t.Fatal(err)
		}
	}
	return rs
}

func (rs *replicaSet) configPath(i int) string {
	return filepath.Join(rs.dir, fmt.Sprintf("cloud-config-%d.yaml", i))
}

// writeConfig writes replica i's cloud-config: the pools, and with the lab a
// BGP session to the router from speaker address i.
func (rs *replicaSet) writeConfig(i int, poolsYAML string) error {
	var b strings.Builder
	// healthChecks is written every time: a reload that dropped it would
	// turn them on, which takes a restart.
	b.WriteString("apiVersion: metal-ccm.io/v1alpha1\nkind: CloudConfig\nhealthChecks:\n  enabled: false\nloadBalancer:\n  pools:\n")
	b.WriteString(poolsYAML)
	if lab != nil {
		fmt.Fprintf(&b, "bgp:\n  asn: %d\n  peers:\n  - address: %s\n    asn: %d\n    localAddress: %s\n    holdTime: 9s\n    gracefulRestart: {restartTime: %s}\n",
			netlab.DefaultSpeakerASN, netlab.RouterAddr(netlab.IPv4), netlab.DefaultRouterASN,
			netlab.SpeakerAddr(netlab.IPv4, i), grRestartTime)
	}
	// Write and rename, as a ConfigMap update swaps the file at once.
	tmp := rs.configPath(i) + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	if err := os.Rename(tmp, rs.configPath(i)); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	return nil
}

// rewriteConfigs writes every replica's config with new pools (a reload).
func (rs *replicaSet) rewriteConfigs(poolsYAML string) error {
	rs.mu.Lock()
	rs.cfgBody = poolsYAML
	n := len(rs.procs)
	rs.mu.Unlock()
	for i := range n {
		if err := rs.writeConfig(i, poolsYAML); err != nil {
			return err
		}
	}
	return nil
}

// start starts replica i (again).
func (rs *replicaSet) start(i int) (*framework.CCM, error) {
	rs.mu.Lock()
	rs.starts[i]++
	name := fmt.Sprintf("%s-%d-%d", rs.lease, i, rs.starts[i])
	rs.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args := append([]string{"--leader-elect-resource-name", rs.lease}, rs.args...)
	c, err := cp.StartCCM(ctx, framework.CCMOptions{Name: name, Kubeconfig: rs.kubecfg[i], CloudConfig: rs.configPath(i), Args: args})
	if err != nil {
		return nil, fmt.Errorf("start replica %d: %w", i, err)
	}
	rs.mu.Lock()
	rs.procs[i] = c
	rs.all = append(rs.all, c)
	rs.mu.Unlock()
	return c, nil
}

// proc is replica i's running process.
func (rs *replicaSet) proc(i int) *framework.CCM {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.procs[i]
}

func (rs *replicaSet) size() int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return len(rs.procs)
}

// leader is the replica whose running process acquired the lease (a process
// that loses it exits).
func (rs *replicaSet) leader() (int, bool) {
	for i := range rs.size() {
		if c := rs.proc(i); c != nil && !c.Exited() && c.Leads() {
			return i, true
		}
	}
	return -1, false
}

// waitLeader waits until a replica leads.
func (rs *replicaSet) waitLeader(ctx context.Context) (int, error) {
	for {
		if i, ok := rs.leader(); ok {
			return i, nil
		}
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("no replica of %s leads: %w", rs.lease, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// holder is the lease's holder identity, "" when none or unreadable.
func (rs *replicaSet) holder(ctx context.Context) string {
	l, err := client.CoordinationV1().Leases("kube-system").Get(ctx, rs.lease, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// waitHolderChange waits until the lease is held by someone other than old
// and returns when that was seen.
func (rs *replicaSet) waitHolderChange(ctx context.Context, old string) (time.Time, error) {
	for {
		if h := rs.holder(ctx); h != "" && h != old {
			return time.Now(), nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("lease %s still held by %s: %w", rs.lease, old, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stopAll stops every running replica and checks the logs of every process
// that ran: none may show a panic.
func (rs *replicaSet) stopAll() {
	rs.mu.Lock()
	procs := append([]*framework.CCM(nil), rs.procs...)
	all := append([]*framework.CCM(nil), rs.all...)
	rs.mu.Unlock()
	for _, c := range procs {
		if c != nil {
			c.Stop(5 * time.Second)
		}
	}
	for _, c := range all {
		if c.LogContains("panic") || c.LogContains("runtime error") {
			rs.t.Errorf("replica %s's log %s shows a panic", c.Name, c.LogPath)
		}
	}
}

// setup starts a test's replica set, its namespace (cleaned up while the
// replicas still run) and a tracker of its Services, and waits for a leader.
func setup(t *testing.T, name string, n int, poolsYAML string, args []string) (context.Context, *replicaSet, *tracker) {
	t.Helper()
	rs := newReplicaSet(t, name, n, poolsYAML, args)
	framework.NewNamespace(t, client, name, framework.ReleaseServices(3*time.Minute))
	tr := newTracker(t, name)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	t.Cleanup(cancel)
	if _, err := rs.waitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	return ctx, rs, tr
}
