package chaos

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// The rows of the L2 faults.
const (
	l2KillFault  = "L2: the answering node's agent SIGKILLed"
	l2PowerFault = "L2: the answering node powered off (its link down)"
	l2CutFault   = "L2: the answering node cut off from the other agents, not from the client"
	l2ProxyFault = "L2: the answering node's kube-proxy stopped, its rules gone (the node stays Ready)"
	l2Failback   = "L2: failback, the answering node back after each fault above (agent restarted, link up, membership healed, kube-proxy running)"
)

const (
	// l2Goal and l2Bound are issue 16's goals for a failover, from the
	// fault to requests succeeding again: l2Goal the median, l2Bound the
	// longest.
	l2Goal  = 2 * time.Second
	l2Bound = 3 * time.Second
	// l2Detection bounds how long two nodes may answer together: the
	// membership's detection time (docs/l2.md), with the margin a busy
	// machine needs.
	l2Detection = 3 * time.Second
	// l2Fail is where a failover or a double answer fails the test: past
	// the goals above, which a loaded machine of two shared cores can miss
	// (a starved agent, one slow request after the takeover) and the table
	// reports, the time says the fault was not handled.
	l2Fail = 2 * l2Bound
	// l2Ask is how often the client asks afresh (a flushed neighbour
	// table, then a request) while a node is cut off, so that every node
	// that answers is heard.
	l2Ask = 250 * time.Millisecond
)

// TestChaosL2 faults the node that answers for an L2 address again and
// again, under a request loop from the client (a new connection every 50
// ms, each within 300 ms), on three real nodes on one segment without a
// router, with the real node agents: its agent SIGKILLed, its link set
// down ("power off"), and its membership traffic dropped while the client
// still reaches it. Per fault, the time from the fault to requests
// succeeding again through the next node, and for the cut, the longest
// time two nodes answered the client's ARP requests / Neighbor
// Solicitations together; and its kube-proxy SIGKILLed with its nftables
// tables deleted (the node stays Ready: only the agent's own check of
// kube-proxy moves the address). The faults alternate between the addresses of
// a dual-stack Service.
func TestChaosL2(t *testing.T) {
	rows := []string{l2KillFault, l2PowerFault, l2CutFault, l2ProxyFault, l2Failback, l2RogueFault, l2StaleFault, l2TwoNodeFault}
	for _, n := range prof.l2Sizes {
		rows = append(rows, atSize(l2KillFault, n), atSize(l2CutFault, n))
	}
	skip := func(err error) {
		for _, f := range rows {
			record(result{fault: f, requests: -1, duplicates: -1, changed: -1, skipped: err.Error()})
		}
		t.Skipf("skipping: %v", err)
	}
	if err := netlab.AvailableL2(); err != nil {
		skip(err)
	}
	if err := framework.RealNodesAvailable(); err != nil {
		skip(err)
	}
	own := startOwnPlane(t, "chaos-l2")
	cfg := filepath.Join(t.TempDir(), "cloud-config.yaml")
	key, err := netlab.WriteL2Key(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte(netlab.L2CloudConfig(key, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	c := netlab.StartL2Cluster(t, netlab.L2ClusterOptions{
		CP: own.cp, Client: own.client, Prefix: "chaosl2", Images: own.archives, SandboxImage: own.pauseRef,
		CloudConfig: cfg, LeaseName: "chaos-l2", Nodes: prof.l2Sizes[len(prof.l2Sizes)-1],
	})
	ctx := context.Background()
	ns := framework.NewNamespace(t, own.client, "chaos-l2")
	// Registered after the cluster, so it runs before the nodes stop.
	t.Cleanup(func() { deletePods(own.client, ns) })
	if _, err := own.client.CoreV1().ServiceAccounts(ns).Create(ctx,
		&v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	framework.CreateLoadBalancer(t, own.client, ns, "echo", framework.DualStack, func(s *v1.Service) {
		for i := range s.Spec.Ports {
			s.Spec.Ports[i].TargetPort = intstr.FromInt32(8080)
		}
	})
	var vips []netip.Addr
	for _, ip := range framework.WaitIngressIPs(t, own.client, ns, "echo", 2, 30*time.Second) {
		vips = append(vips, netip.MustParseAddr(ip))
	}
	all := []int{0, 1, 2}
	owners := []int{netlab.L2Owner(vips[0], all), netlab.L2Owner(vips[1], all)}
	// The pods stay off the answering nodes: a fault of one takes its
	// answering away, not endpoints.
	var podNodes []string
	for i, n := range c.RealNodes {
		if !slices.Contains(owners, i) {
			podNodes = append(podNodes, n.Name)
		}
	}
	if _, err := own.client.AppsV1().Deployments(ns).Create(ctx, echoDeployment("echo", podNodes), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEchoPods(t, own.client, ns, len(podNodes))
	for k, vip := range vips {
		c.WaitMAC(t, vip, owners[k], time.Minute)
		c.WaitAnswers(t, vip)
	}

	const scale = "3 real nodes on one segment, no router; dual-stack Service, the faults alternating between its addresses"
	kill := result{fault: l2KillFault, scale: scale, duplicates: -1, changed: -1, limit: l2Bound}
	power := result{fault: l2PowerFault, scale: scale, duplicates: -1, changed: -1, limit: l2Bound}
	cut := result{fault: l2CutFault, scale: scale, duplicates: -1, changed: -1, limit: l2Detection}
	proxy := result{fault: l2ProxyFault, scale: scale, duplicates: -1, changed: -1, limit: l2Bound}
	back := result{fault: l2Failback, scale: scale, duplicates: -1, changed: -1}
	fault := func(i int) l2Fault {
		k := i % len(vips)
		f := l2Fault{c: c, vip: vips[k], owner: owners[k]}
		f.next = netlab.L2Owner(f.vip, slices.DeleteFunc(slices.Clone(all), func(i int) bool { return i == f.owner }))
		return f
	}
	for i := range prof.l2Faults {
		f := fault(i)
		f.back = &back
		f.run(t, &kill, f.kill, c.Agents[f.owner].Restart, nil)
		f.run(t, &power, func() error { return c.SetNodeLink(f.owner, false) }, func() error { return c.SetNodeLink(f.owner, true) }, nil)
		f.cut(t, &cut)
		f.run(t, &proxy, c.RealNodes[f.owner].StopKubeProxy, c.RealNodes[f.owner].RestartKubeProxy, nil)
		if t.Failed() {
			break
		}
	}
	rogue := result{fault: l2RogueFault, scale: scale, duplicates: -1, note: rogueNote}
	stale := result{fault: l2StaleFault, scale: scale, duplicates: -1, changed: -1, limit: l2StaleBound, note: staleNote}
	if !t.Failed() {
		fault(0).rogue(t, &rogue, key)
	}
	if !t.Failed() {
		fault(1).stale(t, &stale)
	}
	two := result{fault: l2TwoNodeFault, requests: -1, duplicates: -1, changed: -1, skipped: "an earlier L2 row failed"}
	if !t.Failed() {
		two = twoNodes(t, c, own.client, ns)
		// All three nodes in L2 again, as the rows below expect.
		for k, vip := range vips {
			c.WaitMAC(t, vip, owners[k], time.Minute)
		}
	}
	record(two)
	stale.pass = stale.injected > 0 && stale.survived == stale.injected
	record(stale)
	rogue.pass = rogue.injected > 0 && rogue.survived == rogue.injected
	record(rogue)
	back.pass = back.injected > 0 && back.lost == 0
	back.note = "requests lost from each fault's undoing until the node answers again and 1 s after (goal: none)"
	record(back)
	kill.record()
	power.record()
	cut.recordCut()
	proxy.record()

	// The same at larger memberships, the agents added to the real
	// nodes' ones not answering for anything themselves.
	for _, size := range prof.l2Sizes {
		if t.Failed() {
			break
		}
		c.AddAgents(t, size-len(c.Agents))
		scale := fmt.Sprintf("%d L2 agents: 3 real nodes on one segment, no router, and %d agents of nodes without kubelets on it; dual-stack Service", size, size-len(c.RealNodes))
		kill := result{fault: atSize(l2KillFault, size), scale: scale, duplicates: -1, changed: -1, limit: l2Bound}
		cut := result{fault: atSize(l2CutFault, size), scale: scale, duplicates: -1, changed: -1, limit: l2Detection}
		for i := range prof.l2Faults {
			f := fault(i)
			f.run(t, &kill, f.kill, c.Agents[f.owner].Restart, nil)
			f.cut(t, &cut)
			if t.Failed() {
				break
			}
		}
		kill.record()
		cut.recordCut()
	}
}

// atSize names fault's row at a membership of n agents.
func atSize(fault string, n int) string { return fmt.Sprintf("%s, %d agents", fault, n) }

// record records r, a failover's row: it passes when every fault was
// survived and the median is within the goal.
func (r result) record() {
	r.pass = r.survived == r.injected && r.injected > 0 && median(r.recovery) <= l2Goal
	r.note = fmt.Sprintf("recovery: the fault to requests succeeding again through the next node (goal: median %s, max %s; the test fails past %s)", l2Goal, l2Bound, l2Fail)
	record(r)
}

// recordCut records r, a cut's row: the longest double answer of each.
func (r result) recordCut() {
	r.pass = r.survived == r.injected && r.injected > 0
	r.note = fmt.Sprintf("recovery: the longest time two nodes answered together (bound %s: the detection time with a busy machine's margin; the test fails past %s)", l2Detection, l2Fail)
	record(r)
}

// l2Fault is one fault of the node answering for vip, owner, which next
// must take over.
type l2Fault struct {
	c           *netlab.L2Cluster
	vip         netip.Addr
	owner, next int
	// back, when set, tallies the requests lost while the fault is undone
	// and the owner takes its address back.
	back *result
	// bound is the row's goal for a failover; zero: l2Bound. Past twice
	// the goal the test fails.
	bound time.Duration
}

// kill SIGKILLs the owner's agent.
func (f l2Fault) kill() error { f.c.Agents[f.owner].Kill(); return nil }

// cut drops the owner's membership traffic with the other nodes, and
// tallies the longest double answer into res.
func (f l2Fault) cut(t *testing.T, res *result) {
	var undo func() error
	f.run(t, res, func() (err error) {
		undo, err = f.c.BlockBetweenNodes(f.owner, config.DefaultMemberlistPort)
		return err
	}, func() error { return undo() }, &res.recovery)
}

// run injects a fault under a request loop and tallies it into res: the
// requests lost, and the time to requests succeeding again (within
// l2Bound to count as survived). With overlaps set, the client asks afresh
// every l2Ask while the fault lasts, the answers it hears are captured,
// and the longest time two nodes answered together is tallied instead
// (within l2Detection to count as survived). Either time past l2Fail
// fails the test. Then the fault is undone, and the owner must answer
// again.
func (f l2Fault) run(t *testing.T, res *result, inject, undo func() error, overlaps *[]time.Duration) {
	t.Helper()
	var watch *netlab.ReplyWatch
	if overlaps != nil {
		var err error
		if watch, err = f.c.WatchARPReplies(context.Background(), f.vip); err != nil {
			t.Fatal(err)
		}
		defer watch.Close()
	}
	loop := f.c.StartFailoverLoop(f.vip)
	fault := time.Now()
	if err := inject(); err != nil {
		t.Fatal(err)
	}
	undone := false
	defer func() {
		if !undone {
			_ = undo()
		}
	}()
	if overlaps != nil {
		// Asked afresh for longer than l2Fail, every node still answering
		// is heard, and one that never stops shows as an overlap past it.
		for time.Since(fault) < l2Fail+2*time.Second {
			if err := f.c.FlushClientNeighbors(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(l2Ask)
		}
	}
	took := f.c.WaitMAC(t, f.vip, f.next, 10*time.Second)
	reqs := loop.StopAfter(time.Second)
	back := reqs.Recovered(fault)
	res.requests += len(reqs)
	res.lost += reqs.Failed(fault)
	var err error
	res.injected++
	if overlaps != nil {
		o := netlab.OverlapOfMACs(watch.Replies(), l2Ask+50*time.Millisecond)
		if o <= l2Detection {
			res.survived++
		}
		if o > l2Fail {
			err = fmt.Errorf("two nodes answered %s together for %s", f.vip, o)
		}
		*overlaps = append(*overlaps, o)
	} else {
		bound, fail := l2Bound, l2Fail
		if f.bound > 0 {
			bound, fail = f.bound, 2*f.bound
		}
		if back <= bound {
			res.survived++
		}
		if back > fail {
			err = fmt.Errorf("requests to %s succeeded again %s after the fault", f.vip, back)
		}
		res.recovery = append(res.recovery, back)
	}
	t.Logf("%s (%s): %s answers after %s; requests succeeding again after %s; lost %d of %d (%v)", res.fault, f.vip,
		f.c.RealNodes[f.next].Name, took.Round(time.Millisecond), back.Round(time.Millisecond), reqs.Failed(fault), len(reqs), reqs.FirstError())
	if err != nil {
		t.Errorf("%s: %v", res.fault, err)
	}
	undone = true
	var backLoop *netlab.FailoverLoop
	if f.back != nil {
		backLoop = f.c.StartFailoverLoop(f.vip)
	}
	undoAt := time.Now()
	if err := undo(); err != nil {
		t.Fatal(err)
	}
	took = f.c.WaitMAC(t, f.vip, f.owner, 30*time.Second)
	if backLoop != nil {
		reqs := backLoop.StopAfter(time.Second)
		f.back.injected++
		f.back.requests += len(reqs)
		f.back.lost += reqs.Failed(undoAt)
		if reqs.Failed(undoAt) == 0 {
			f.back.survived++
		}
		t.Logf("%s undone: %s answers again after %s; lost %d of %d (%v)", res.fault, f.c.RealNodes[f.owner].Name,
			took.Round(time.Millisecond), reqs.Failed(undoAt), len(reqs), reqs.FirstError())
	}
	f.c.WaitAnswers(t, f.vip)
}

// median is the middle of ds (the lower one of an even count); 0 for none.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}
