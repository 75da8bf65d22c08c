package bench

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/metal-ccm/metal-ccm/pkg/annotation"
	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// The ToR scenario measures how long an address written into a Service's
// status takes to reach the kernel of every ToR router of the leaf-spine
// lab (test/netlab: two racks of two nodes, each rack behind its ToR, a
// spine above), through a real metal-node-agent on each node, and how long
// its removal takes to leave them (issue 15).
//
// The harness writes the status itself, as the CCM would, one address at a
// time, from torPool, which nothing else in the repository uses. The
// Service names a pool the run's CCM does not have (torUnservedPool), so
// the CCM refuses it and never writes its status: the harness's writes are
// the only ones. The agents serve it all the same (they announce what the
// status of every Service of type LoadBalancer holds). The ToRs' kernels
// are watched by a netlink subscription in their namespaces
// (netlab.RouteWatch): a time is that of the kernel's message, not of a
// poll.
var torPool = netip.MustParsePrefix("198.18.124.0/24")

const (
	// maxTorChanges bounds -tor-changes; the pool's addresses are used
	// in turn (each is withdrawn before the next is written).
	maxTorChanges = 100000
	// goalTorChanges is the size from which the p99 says something.
	goalTorChanges = 100
	// torGoal is the goal on the p99 of both directions (issue 15).
	torGoal = time.Second
	// torHoldTime is the agents' sessions' hold time.
	torHoldTime = 9 * time.Second
	// torChangeTimeout bounds the wait for one change at the ToRs.
	torChangeTimeout = 30 * time.Second
	// torQuiet is how long both ToRs' routes of a changed address must
	// stay as wanted for the change to count as done.
	torQuiet = 200 * time.Millisecond
	// torWarmups are changes made, and not counted, before the measured
	// ones: the first path on a fresh session.
	torWarmups = 1
	// torService is the Service whose status the harness writes.
	torService = "bench-tor/tor"
	// torUnservedPool is the pool the Service asks for, which the run's
	// CCM does not have.
	torUnservedPool = "bench-tor-unserved"
)

// torUnavailable says why the scenario cannot run here, or "".
func (e *env) torUnavailable() string {
	if !e.ours() {
		return "BENCH_CCM_CMD: the node agent is metal-ccm's own"
	}
	if err := netlab.Available(); err != nil { // root, ip, BIRD
		return err.Error()
	}
	if e.o.TorFRR {
		if err := netlab.AvailableFRR(); err != nil {
			return err.Error()
		}
	}
	if _, err := framework.Binary("metal-node-agent"); err != nil {
		return err.Error()
	}
	return ""
}

// torLab is the scenario's leaf-spine lab, its nodes' agents and the
// watches of its ToRs' kernels.
type torLab struct {
	e       *env
	ls      *netlab.LeafSpine
	nodes   []string
	watches [2]*netlab.RouteWatch
	// kinds names each ToR's router ("BIRD", "FRR").
	kinds [2]string
}

// torRoutes is the ToR scenario: the leaf-spine lab beside the run's
// control plane, its four nodes registered (Ready, zone rack0 or rack1)
// with an agent each, then TorChanges addresses written into a Service's
// status and removed, one at a time: for each, from the write's response
// until the route is in (out of) the kernel of both ToRs, each with its
// own rack's nodes as next hops. Everything it makes goes at its end, also
// on failure: agents and relays by PID, the lab's namespaces by name, the
// nodes and the Service.
func (e *env) torRoutes(ctx context.Context, s *Scenario) error {
	if why := e.torUnavailable(); why != "" {
		s.Skipped = why
		return nil
	}
	began := time.Now()
	tl, err := e.startTorLab(ctx)
	if tl != nil {
		defer tl.close(ctx)
	}
	if err != nil {
		return err
	}
	s.add("setup_s", "(setup: lab built, agents' sessions established in)", time.Since(began).Seconds(), "s")
	for i := range torWarmups {
		if _, _, err := tl.change(ctx, torAddr(i)); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	n := e.o.TorChanges
	var up, down, writes []time.Duration
	var upAt, downAt [2][]time.Duration
	for i := range n {
		u, d, err := tl.change(ctx, torAddr(torWarmups+i))
		if err != nil {
			return fmt.Errorf("change %d of %d: %w", i+1, n, err)
		}
		up, down, writes = append(up, u.every), append(down, d.every), append(writes, u.write, d.write)
		for r := range 2 {
			upAt[r], downAt[r] = append(upAt[r], u.tor[r]), append(downAt[r], d.tor[r])
		}
	}
	scaled := n < goalTorChanges
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	goal := ms(torGoal)
	s.add("changes", "changes measured (each: written, then removed)", float64(n), "count")
	for _, dir := range []struct {
		key, what string
		every     []time.Duration
		at        [2][]time.Duration
	}{
		{"announce", "address in every ToR's kernel, after the status write", up, upAt},
		{"withdraw", "address gone from every ToR's kernel, after the status write", down, downAt},
	} {
		s.add(dir.key+"_p50_ms", dir.what+", p50", ms(percentile(dir.every, 0.5)), "ms")
		s.add(dir.key+"_p99_ms", dir.what+", p99", ms(percentile(dir.every, 0.99)), "ms").
			atMost(goal, "≤ 1 s p99", scaled)
		s.add(dir.key+"_max_ms", dir.what+", highest", ms(percentile(dir.every, 1)), "ms")
		for r := range 2 {
			s.add(fmt.Sprintf("%s_tor%d_p99_ms", dir.key, r), fmt.Sprintf("of which ToR %d (%s), p99", r, tl.kinds[r]),
				ms(percentile(dir.at[r], 0.99)), "ms")
		}
	}
	s.add("write_p50_ms", "(the status write itself, request to response, p50)", ms(percentile(writes, 0.5)), "ms")
	s.add("write_p99_ms", "(the status write itself, request to response, p99)", ms(percentile(writes, 0.99)), "ms")
	s.notef("four metal-node-agents (announceFrom Nodes), one per node namespace of the leaf-spine lab (ToRs: %s, %s), "+
		"each peering with its rack's ToR; the harness writes each address (%s) into the status of %s and removes it, "+
		"%d change(s) first not counted; the run's CCM refuses the Service (it names a pool the CCM does not have) and writes nothing; "+
		"the ToRs' kernels are followed by a netlink route subscription; a change is done once both ToRs' routes have stayed "+
		"as wanted for %s, and its time is that of the last route change before (times are from the write's response: "+
		"one below 0 means the ToRs had the change before the harness had the response)",
		tl.kinds[0], tl.kinds[1], torPool, torService, torWarmups, torQuiet)
	return nil
}

// torAddr is the address of change i: the pool's from .1, in turn.
func torAddr(i int) netip.Addr {
	a := torPool.Addr()
	for range 1 + i%254 {
		a = a.Next()
	}
	return a
}

// startTorLab builds the lab, registers its nodes, creates the Service,
// starts the agents and waits until every agent has its sessions. On error
// it returns what it made, for close.
func (e *env) startTorLab(ctx context.Context) (*torLab, error) {
	opts := netlab.LeafSpineOptions{Beside: e.lab}
	tl := &torLab{e: e, kinds: [2]string{"BIRD", "BIRD"}}
	if e.o.TorFRR {
		opts.TorRouter = [2]netlab.RouterKind{netlab.RouterBIRD, netlab.RouterFRR}
		tl.kinds[1] = "FRR"
	}
	e.log.Info("Starting the leaf-spine lab", "tors", tl.kinds)
	ls, err := netlab.StartLeafSpine(opts)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	tl.ls = ls
	ns, name := splitKey(torService)
	if err := framework.EnsureNamespace(ctx, e.cs, ns); err != nil {
		return tl, fmt.Errorf("bench: %w", err)
	}
	svc := framework.LoadBalancerService(ns, name, framework.WithoutNodePorts,
		framework.WithAnnotation(string(annotation.NamePool), torUnservedPool))
	if _, err := e.cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return tl, fmt.Errorf("bench: create Service %s: %w", torService, err)
	}
	cfg := filepath.Join(e.o.Dir, "tor-agent-cloud-config.yaml")
	if err := os.WriteFile(cfg, []byte(ls.AgentCloudConfig(torHoldTime, torPool.String())), 0o600); err != nil {
		return tl, fmt.Errorf("bench: write cloud-config: %w", err)
	}
	for r := range ls.Racks {
		for i, nodeNS := range ls.Racks[r] {
			if err := tl.startNode(ctx, r, i, nodeNS, cfg); err != nil {
				return tl, err
			}
		}
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for r, tor := range ls.Tors {
		if err := ls.WaitEstablished(wctx, tor, append(ls.NodeAddrs(netlab.IPv4, r), ls.NodeAddrs(netlab.IPv6, r)...)...); err != nil {
			return tl, fmt.Errorf("bench: %w", err)
		}
		if tl.watches[r], err = netlab.WatchRoutes(tor, torPool); err != nil {
			return tl, fmt.Errorf("bench: %w", err)
		}
	}
	return tl, nil
}

// startNode registers node i of rack r, Ready, with its addresses and its
// rack's zone, and starts its agent in its namespace with the API server
// relayed there. The agent and the relay stop when the lab closes.
func (tl *torLab) startNode(ctx context.Context, r, i int, nodeNS, cfg string) error {
	e := tl.e
	name := fmt.Sprintf("tor-r%dn%d", r, i)
	tl.nodes = append(tl.nodes, name)
	if _, err := framework.CreateReadyNode(ctx, e.cs, name,
		netlab.LeafSpineNodeAddr(netlab.IPv4, r, i).String(), netlab.LeafSpineNodeAddr(netlab.IPv6, r, i).String()); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, netlab.LeafSpineZoneLabel, netlab.LeafSpineZone(r))
	if _, err := e.cs.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("bench: label node %s: %w", name, err)
	}
	relay, err := e.cp.RelayAPIServer(nodeNS)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if err := tl.ls.AddCloser(relay.Close); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	kubeconfig := filepath.Join(e.o.Dir, name+"-kubeconfig")
	if err := relay.WriteKubeconfig(kubeconfig, "admin", e.token); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	p, err := framework.StartNodeAgent(framework.NodeAgentOptions{Name: "agent-" + name,
		LogPath: filepath.Join(e.o.Dir, "logs", "metal-node-agent-"+name+".log"), NetNS: nodeNS, Node: name,
		Kubeconfig: kubeconfig, CloudConfig: cfg})
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	// Closers run last first: the agent stops before its relay.
	if err := tl.ls.AddCloser(func() { p.Stop(10 * time.Second) }); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}

// torTimes are one direction of one change: until both ToRs had it, and
// until each did, from the write's response; and the write itself, from
// its request to its response.
type torTimes struct {
	every time.Duration
	tor   [2]time.Duration
	write time.Duration
}

// change writes addr into the Service's status, waits until both ToRs
// route it to their own rack's nodes, removes it, and waits until neither
// has a route: the two times from the writes' responses.
func (tl *torLab) change(ctx context.Context, addr netip.Addr) (up, down torTimes, err error) {
	p := netip.PrefixFrom(addr, 32)
	for r, w := range tl.watches {
		if hops, ok := w.NextHops(p); ok {
			return up, down, fmt.Errorf("bench: ToR %d has a route to %s (via %v) before it was written", r, p, hops)
		}
	}
	ingress := fmt.Sprintf(`[{"ip":%q,"ipMode":"VIP"}]`, addr)
	if up, err = tl.write(ctx, p, ingress, true); err != nil {
		return up, down, err
	}
	down, err = tl.write(ctx, p, "[]", false)
	return up, down, err
}

// write patches the Service's status.loadBalancer.ingress and waits until
// both ToRs have the route of p (present: via their rack's nodes) or have
// none, and have kept it so for torQuiet: the times are those of each
// ToR's last change, so that a passing state (a ToR that loses its nodes'
// paths takes the spine's, from the other rack, until that one goes too)
// does not cut a change short, and the next change begins on quiet ToRs.
func (tl *torLab) write(ctx context.Context, p netip.Prefix, ingress string, present bool) (torTimes, error) {
	var t torTimes
	ns, name := splitKey(torService)
	patch := []byte(`{"status":{"loadBalancer":{"ingress":` + ingress + `}}}`)
	sent := time.Now()
	if _, err := tl.e.cs.CoreV1().Services(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return t, fmt.Errorf("bench: status of %s: %w", torService, err)
	}
	wrote := time.Now()
	t.write = wrote.Sub(sent)
	ctx, cancel := context.WithTimeout(ctx, torChangeTimeout)
	defer cancel()
	var at [2]time.Time
	for settled := false; !settled; {
		for r, w := range tl.watches {
			var want []netip.Addr
			if present {
				want = tl.ls.NodeAddrs(netlab.IPv4, r)
			}
			var err error
			if at[r], err = w.WaitSettled(ctx, p, want, torQuiet); err != nil {
				return t, fmt.Errorf("bench: ToR %d: %w", r, err)
			}
		}
		// The other ToR may have changed while this one settled.
		settled = true
		for r, w := range tl.watches {
			settled = settled && w.ChangedAt(p).Equal(at[r])
		}
	}
	for r := range at {
		t.tor[r] = at[r].Sub(wrote)
	}
	// The later ToR's time, which may be below 0 like each (see the note).
	t.every = max(t.tor[0], t.tor[1])
	return t, nil
}

// close stops the watches, the agents and relays (by PID) and the lab's
// routers, deletes its namespaces by name, then the nodes and the Service.
func (tl *torLab) close(ctx context.Context) {
	e := tl.e
	for _, w := range tl.watches {
		if w != nil {
			w.Close()
		}
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.o.Timeout)
	defer cancel()
	var errs []error
	if tl.ls != nil {
		errs = append(errs, tl.ls.Close())
	}
	errs = append(errs, e.deleteServices(dctx, []string{torService}))
	if len(tl.nodes) > 0 {
		errs = append(errs, e.deleteNodes(dctx, tl.nodes))
	}
	if err := errors.Join(errs...); err != nil {
		e.log.Error(err, "Cleaning up the ToR scenario")
	}
}
