package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/metal-ccm/metal-ccm/pkg/annotation"
	"github.com/metal-ccm/metal-ccm/test/framework"
)

// The L2 node agent scenario (0d) measures what one metal-node-agent costs
// its node when it answers ARP and Neighbor Solicitations for many
// LoadBalancer addresses of an L2 pool (docs/l2.md; issue 16): its RSS and
// CPU once it answers for all of them.
//
// The agent runs in a network namespace the scenario creates, linked by a
// veth pair to a second one, the client's: one Ethernet segment of two
// hosts, with the subnets l2AgentNet4 and l2AgentNet6, which nothing else
// in the repository uses. The agent's node has its InternalIPs there (the
// membership binds the IPv4 one), and the addresses of the Services are of
// the same subnets, so the agent answers on that link (pkg/l2's choice of
// interfaces). Neither namespace has a route off the segment, and the agent
// namespace does not forward: nothing leaves the machine.
//
// The agent's node is the only one l2.nodeSelector selects, so it is the
// only expected agent and, alive, a majority of one (pkg/l2/elect); the
// other nodes are Ready (candidates for every address, as nodes without an
// L2 agent are) but never alive in the membership and never dialled (the
// agents join only the nodes the selector picks). So the agent owns every
// address. The other nodes' InternalIPs are of l2AgentOthers, which nothing
// else uses either.
//
// The harness writes the Services' status itself, as the CCM would, one
// address each, alternately IPv4 and IPv6. The Services name a pool the
// run's CCM does not have (l2AgentUnservedPool): the CCM refuses them and
// never writes their status. The agent answers what the status of any
// Service of type LoadBalancer holds in its own L2 pool.
var (
	l2AgentNet4   = netip.MustParsePrefix("198.18.126.0/24")
	l2AgentNet6   = netip.MustParsePrefix("2001:db8:126::/64")
	l2AgentOthers = netip.MustParsePrefix("198.18.127.0/24")
)

const (
	// l2AgentVIPs is how many addresses of each family the Services get:
	// host numbers 1 to 250 of each subnet (198.18.126.1,
	// 2001:db8:126::1, written with the same digits as the other labs').
	l2AgentVIPs = 250
	// maxL2AgentServices: one address each, alternately of each family.
	maxL2AgentServices = 2 * l2AgentVIPs
	// maxL2AgentNodes: the agent's, and the others at .1 to .254 of
	// l2AgentOthers.
	maxL2AgentNodes = 255
	// l2AgentClientHost and l2AgentNodeHost are the host numbers of the
	// client's and the agent's node's addresses on the segment.
	l2AgentClientHost = 251
	l2AgentNodeHost   = 254
	// defaultL2AgentNodes: a small cluster, as L2 clusters are (one flat
	// segment): each address has that many candidates.
	defaultL2AgentNodes = 10
	// goalL2AgentServices is the size the goal is stated for (issue 16).
	goalL2AgentServices = 500
	// l2AgentGoalRSSMiB: RSS < 64 MiB with 500 L2 addresses.
	l2AgentGoalRSSMiB = 64
	// l2AgentLink is the veth's name in both namespaces.
	l2AgentLink = "eth0"
	// l2AgentLabel selects the agent's node (l2.nodeSelector).
	l2AgentLabel = "bench.metal-ccm.io/l2-agent"
	// l2AgentNamespace holds the scenario's Services.
	l2AgentNamespace = "bench-l2"
	// l2AgentPool is the agent's L2 pool; l2AgentUnservedPool the pool the
	// Services ask for, which the run's CCM does not have.
	l2AgentPool         = "bench-l2"
	l2AgentUnservedPool = "bench-l2-unserved"
	// l2AgentResolveWait bounds how long the client's kernel may take to
	// resolve every address after the harness's packets.
	l2AgentResolveWait = 15 * time.Second
)

// l2AgentNetNSNames are the scenario's namespaces (the agent's, the
// client's), named per harness process so that concurrent runs on one
// machine do not meet.
func l2AgentNetNSNames() (agentNS, clientNS string) {
	return fmt.Sprintf("mccm-bench-l2-%d", os.Getpid()), fmt.Sprintf("mccm-bench-l2c-%d", os.Getpid())
}

// l2AgentAddr is host number h of the segment in family v4 or IPv6: the
// IPv6 one with the same digits (198.18.126.17, 2001:db8:126::17).
func l2AgentAddr(v4 bool, h int) netip.Addr {
	if v4 {
		return nthAddr(l2AgentNet4, h)
	}
	return netip.MustParseAddr(strings.TrimSuffix(l2AgentNet6.Addr().String(), ":") + ":" + strconv.Itoa(h))
}

// nthAddr is the n-th address of p, from its first.
func nthAddr(p netip.Prefix, n int) netip.Addr {
	a := p.Masked().Addr()
	for range n {
		a = a.Next()
	}
	return a
}

// l2AgentVIP is the address of Service i: IPv4 for even i, IPv6 for odd,
// host numbers from 1.
func l2AgentVIP(i int) netip.Addr { return l2AgentAddr(i%2 == 0, 1+i/2) }

// l2AgentUnavailable says why the scenario cannot run here, or "".
func (e *env) l2AgentUnavailable() string {
	switch {
	case !e.ours():
		return "BENCH_CCM_CMD: the node agent is metal-ccm's own"
	case os.Geteuid() != 0:
		return "needs root (the agent runs in network namespaces the harness creates, and answers ARP with CAP_NET_RAW)"
	}
	if why := e.healthUnavailable(); why != "" { // the same tools (ip, nsenter)
		return why
	}
	if _, err := framework.Binary("metal-node-agent"); err != nil {
		return err.Error()
	}
	return ""
}

// l2Agent is scenario 0d: L2AgentNodes Ready nodes, the agent's the only
// one that l2.nodeSelector selects, and L2AgentServices LoadBalancer
// Services each with one address of the agent's L2 pool in its status, then
// one metal-node-agent as that node, idle once it answers for every
// address: its RSS and CPU; then the client namespace resolves every
// address, which must give the agent's MAC. It runs before scenario 1 and
// deletes its nodes and Services after, also on failure.
func (e *env) l2Agent(ctx context.Context, s *Scenario) error {
	names := make([]string, e.o.L2AgentNodes)
	for i := range names {
		names[i] = fmt.Sprintf("l2agent-%05d", i)
	}
	keys := serviceKeys(l2AgentNamespace, "l2", e.o.L2AgentServices)
	return runIdle(ctx, e, s, idleScenario[*l2AgentLab]{
		name: "L2 agent", unavailable: e.l2AgentUnavailable, nodes: names, services: keys,
		start: func() (*l2AgentLab, error) { return startL2AgentLab(e) }, timeStart: true,
		setup: func(ctx context.Context) error {
			if err := e.l2AgentNodes(ctx, names); err != nil {
				return err
			}
			return e.l2AgentServices(ctx, keys)
		},
		setupTitle: "(setup: namespaces, nodes, Services and their addresses in)",
		settle:     true,
		measure: func(ctx context.Context, s *Scenario, ll *l2AgentLab) error {
			return e.l2AgentFigures(ctx, s, ll, names)
		},
	})
}

// l2AgentFigures measures the agent as names[0] and adds its figures.
func (e *env) l2AgentFigures(ctx context.Context, s *Scenario, ll *l2AgentLab, names []string) error {
	r, err := e.measureL2Agent(ctx, ll, names[0])
	if err != nil {
		return err
	}
	scaled := e.o.L2AgentServices < goalL2AgentServices
	s.add("answered", "L2 addresses the agent answers for (metal_ccm_agent_l2_answered_addresses)", r.answered, "count")
	s.add("resolved", "of which the client resolved to the agent's MAC, after the idle time (ARP, NDP)", float64(r.resolved), "count")
	s.add("rss_mib", "agent RSS at the end", mib(r.rss), "MiB").
		atMost(l2AgentGoalRSSMiB, fmt.Sprintf("< %d MiB", l2AgentGoalRSSMiB), scaled)
	agentExecutableFigure(s, r.agentRun)
	agentMemoryFigures(s, r.agentRun)
	s.add("cpu_pct", "agent CPU while idle, % of one core", r.cpuPct, "%")
	s.add("sys_cpu_pct", "of which in the kernel (system time), % of one core", r.sysPct, "%")
	s.add("start_s", "agent started until it answered for every address", r.startup.Seconds(), "s")
	s.notef("one metal-node-agent (an L2 pool only, no BGP) as node %s, in the scenario's network namespace, on a veth "+
		"segment (%s, %s) with a client namespace, idle for %s after a warm-up of %s; l2.nodeSelector selects its node "+
		"alone (the other %d nodes are Ready candidates without an agent), so it answers for every address; the harness "+
		"writes the Services' addresses, half IPv4, half IPv6, and the run's CCM refuses the Services (they name a pool "+
		"it does not have)", names[0], l2AgentNet4, l2AgentNet6, e.o.L2AgentIdle, min(agentWarmup, e.o.L2AgentIdle), len(names)-1)
	return nil
}

// l2AgentNodes creates the nodes Ready (initialized: without the
// uninitialized taint), the first the agent's, with both InternalIPs on
// the segment and the label l2.nodeSelector picks; the others with an IPv4
// InternalIP of l2AgentOthers only.
func (e *env) l2AgentNodes(ctx context.Context, names []string) error {
	err := parallel(ctx, len(names), harnessWorkers, func(ctx context.Context, i int) error {
		if i > 0 {
			_, err := framework.CreateReadyNode(ctx, e.cs, names[i], nthAddr(l2AgentOthers, i).String())
			return err
		}
		if _, err := framework.CreateReadyNode(ctx, e.cs, names[0],
			l2AgentAddr(true, l2AgentNodeHost).String(), l2AgentAddr(false, l2AgentNodeHost).String()); err != nil {
			return err
		}
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}}}`, l2AgentLabel)
		if _, err := e.cs.CoreV1().Nodes().Patch(ctx, names[0], types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("label node %s: %w", names[0], err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return e.waitInitialized(ctx, names)
}

// l2AgentServices creates the Services and writes each one's address into
// its status, as the CCM would, then waits until the harness's watch has
// seen them all.
func (e *env) l2AgentServices(ctx context.Context, keys []string) error {
	if err := framework.EnsureNamespace(ctx, e.cs, l2AgentNamespace); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	err := parallel(ctx, len(keys), harnessWorkers, func(ctx context.Context, i int) error {
		ns, name := splitKey(keys[i])
		svc := framework.LoadBalancerService(ns, name, framework.WithoutNodePorts,
			framework.WithAnnotation(string(annotation.NamePool), l2AgentUnservedPool))
		if _, err := e.cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("bench: create Service %s: %w", keys[i], err)
		}
		patch := fmt.Sprintf(`{"status":{"loadBalancer":{"ingress":[{"ip":%q,"ipMode":"VIP"}]}}}`, l2AgentVIP(i))
		if _, err := e.cs.CoreV1().Services(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
			return fmt.Errorf("bench: status of %s: %w", keys[i], err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return e.waitAddresses(ctx, keys)
}

// l2AgentRun is what the measured agent did.
type l2AgentRun struct {
	agentRun
	// answered is the agent's metal_ccm_agent_l2_answered_addresses after
	// the idle time; resolved how many addresses the client then resolved
	// to the agent's MAC.
	answered float64
	resolved int
}

// measureL2Agent starts the agent as node, waits until it answers for every
// address with a majority, lets it warm up, measures it for L2AgentIdle,
// has the client resolve every address and stops the agent (by PID; the
// namespaces go by name in close).
func (e *env) measureL2Agent(ctx context.Context, ll *l2AgentLab, node string) (l2AgentRun, error) {
	var r l2AgentRun
	cfg, err := ll.cloudConfig()
	if err != nil {
		return r, err
	}
	// As in scenario 0b: the PID is the agent's (StartNodeAgent execs), and
	// gctrace gives its live heap.
	e.log.Info("Starting a node agent in the L2 agent namespace", "node", node)
	started := time.Now()
	p, err := e.startMeasuredAgent("l2agent", "metal-node-agent-l2.log", ll.ns, node, ll.kubeconfig, cfg)
	if err != nil {
		return r, err
	}
	defer p.Stop(10 * time.Second)
	want := float64(e.o.L2AgentServices)
	var exited error
	if err := e.waitForEvery(ctx, 250*time.Millisecond, "L2 agent answers for every address", func() (bool, string) {
		if exited = agentExited(p); exited != nil {
			return true, "" // no use waiting longer
		}
		m, err := ll.metrics(ctx)
		if err != nil {
			return false, err.Error()
		}
		return m.answered == want && m.majority == 1,
			fmt.Sprintf("answers for %.0f of %.0f addresses, %.0f member(s) alive, majority %.0f", m.answered, want, m.members, m.majority)
	}); err != nil {
		return r, err
	}
	if exited != nil {
		return r, exited
	}
	startup := time.Since(started)
	if r.agentRun, err = e.watchIdleAgent(ctx, p, min(agentWarmup, e.o.L2AgentIdle), e.o.L2AgentIdle); err != nil {
		return r, err
	}
	r.startup = startup
	// Read after the CPU sample: the scrape and the client's solicitations
	// are the harness's, not idle work.
	m, err := ll.metrics(ctx)
	if err != nil {
		return r, err
	}
	r.answered = m.answered
	vips := make([]netip.Addr, e.o.L2AgentServices)
	for i := range vips {
		vips[i] = l2AgentVIP(i)
	}
	if r.resolved, err = ll.resolve(ctx, vips); err != nil {
		return r, err
	}
	if err := agentExited(p); err != nil {
		return r, err
	}
	e.log.Info("L2 agent measured", "cpuPct", r.cpuPct, "rssMiB", mib(r.rss), "hwmMiB", mib(r.hwm),
		"answered", r.answered, "resolved", r.resolved)
	return r, nil
}

// l2AgentLab is the scenario's two namespaces: the agent's (with the API
// relay) and the client's, linked by a veth.
type l2AgentLab struct {
	*benchNetNS
	clientNS string
	// agentMAC is the MAC address of the agent's end of the veth.
	agentMAC string
}

// startL2AgentLab makes the agent's namespace (startBenchNetNS, nothing on
// its loopback), the client's, and the veth between them with each end's
// addresses (without DAD and without link-local addresses: every address
// stays in the scenario's subnets). On error nothing is left.
func startL2AgentLab(e *env) (ll *l2AgentLab, err error) {
	agentNS, clientNS := l2AgentNetNSNames()
	n, err := startBenchNetNS(e, agentNS, netip.Prefix{}, 10*time.Second)
	if err != nil {
		return nil, err
	}
	ll = &l2AgentLab{benchNetNS: n}
	defer func() {
		if err != nil {
			ll.close()
		}
	}()
	if err := ipCmd("netns", "add", clientNS); err != nil {
		return ll, err
	}
	ll.clientNS = clientNS
	if err := ipCmd("-n", agentNS, "link", "add", l2AgentLink, "type", "veth", "peer", "name", l2AgentLink, "netns", clientNS); err != nil {
		return ll, err
	}
	for _, end := range []struct {
		ns   string
		host int
	}{{agentNS, l2AgentNodeHost}, {clientNS, l2AgentClientHost}} {
		for _, args := range [][]string{
			{"-n", end.ns, "link", "set", "dev", l2AgentLink, "addrgenmode", "none"},
			{"-n", end.ns, "addr", "add", netip.PrefixFrom(l2AgentAddr(true, end.host), l2AgentNet4.Bits()).String(), "dev", l2AgentLink},
			{"-n", end.ns, "-6", "addr", "add", netip.PrefixFrom(l2AgentAddr(false, end.host), l2AgentNet6.Bits()).String(),
				"dev", l2AgentLink, "nodad"},
			{"-n", end.ns, "link", "set", "dev", l2AgentLink, "up"},
		} {
			if err := ipCmd(args...); err != nil {
				return ll, err
			}
		}
	}
	var links []struct {
		Address string `json:"address"`
	}
	if err := ipJSON(&links, "-n", agentNS, "link", "show", "dev", l2AgentLink); err != nil {
		return ll, err
	}
	if len(links) != 1 || links[0].Address == "" {
		return ll, fmt.Errorf("bench: no MAC address on %s in %s", l2AgentLink, agentNS)
	}
	ll.agentMAC = links[0].Address
	return ll, nil
}

// close deletes the client's namespace by name (the veth goes with it),
// then the agent's (close of benchNetNS: the relay first).
func (ll *l2AgentLab) close() {
	if ll.clientNS != "" {
		if err := ipCmd("netns", "delete", ll.clientNS); err != nil {
			ll.e.log.Error(err, "Deleting a bench namespace", "netns", ll.clientNS)
		}
	}
	ll.benchNetNS.close()
}

// cloudConfig writes the agent's config: one pool of the Services'
// addresses, announced with L2 only (no BGP peer: the agent runs no
// speaker), and l2.nodeSelector on the agent's node's label.
func (ll *l2AgentLab) cloudConfig() (string, error) {
	body := fmt.Sprintf(`apiVersion: metal-ccm.io/v1alpha1
kind: CloudConfig
loadBalancer:
  pools:
  - name: %s
    addresses: ["%s-%s", "%s-%s"]
    announce: [L2]
l2:
  nodeSelector:
    matchLabels:
      %s: "true"
  insecureMembership: true
`, l2AgentPool, l2AgentAddr(true, 1), l2AgentAddr(true, l2AgentVIPs), l2AgentAddr(false, 1), l2AgentAddr(false, l2AgentVIPs), l2AgentLabel)
	path := filepath.Join(ll.e.o.Dir, "l2agent-cloud-config.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		return "", fmt.Errorf("bench: write cloud-config: %w", err)
	}
	return path, nil
}

// l2Metrics are the agent's L2 gauges.
type l2Metrics struct {
	answered, members, majority float64
}

// metrics reads the agent's L2 gauges from its /metrics.
func (ll *l2AgentLab) metrics(ctx context.Context) (l2Metrics, error) {
	var m l2Metrics
	url := "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(agentStatusPort)) + "/metrics"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return m, fmt.Errorf("bench: %w", err)
	}
	resp, err := ll.client.Do(req)
	if err != nil {
		return m, fmt.Errorf("bench: agent /metrics: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return m, fmt.Errorf("bench: agent /metrics: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return m, fmt.Errorf("bench: agent /metrics: %s", resp.Status)
	}
	text := string(body)
	m.answered = promSum(text, "metal_ccm_agent_l2_answered_addresses", nil)
	m.members = promSum(text, "metal_ccm_agent_l2_members", nil)
	m.majority = promSum(text, "metal_ccm_agent_l2_majority", nil)
	return m, nil
}

// resolve has the client's kernel resolve every address (one UDP datagram
// to each: the kernel sends an ARP request or a Neighbor Solicitation and
// holds the datagram until it is answered; the agent's namespace, which
// does not forward, drops it) and returns how many its neighbour table then
// has with the agent's MAC.
func (ll *l2AgentLab) resolve(ctx context.Context, addrs []netip.Addr) (int, error) {
	for _, a := range addrs {
		conn, err := framework.DialInNetNS(ctx, ll.clientNS, "udp", net.JoinHostPort(a.String(), "9"))
		if err != nil {
			return 0, fmt.Errorf("bench: %w", err)
		}
		_, err = conn.Write([]byte{0})
		_ = conn.Close()
		if err != nil {
			return 0, fmt.Errorf("bench: UDP to %s from %s: %w", a, ll.clientNS, err)
		}
	}
	want := make(map[netip.Addr]bool, len(addrs))
	for _, a := range addrs {
		want[a] = true
	}
	deadline := time.Now().Add(l2AgentResolveWait)
	for {
		var neigh []struct {
			Dst    string   `json:"dst"`
			LLAddr string   `json:"lladdr"`
			State  []string `json:"state"`
		}
		if err := ipJSON(&neigh, "-n", ll.clientNS, "neigh", "show", "dev", l2AgentLink); err != nil {
			return 0, err
		}
		// Settled: every address has an entry, none still soliciting
		// (INCOMPLETE); FAILED or another MAC is a miss.
		got, settled := 0, 0
		for _, n := range neigh {
			a, err := netip.ParseAddr(n.Dst)
			if err != nil || !want[a] {
				continue
			}
			if strings.EqualFold(n.LLAddr, ll.agentMAC) {
				got++
			}
			if !slices.Contains(n.State, "INCOMPLETE") {
				settled++
			}
		}
		if got == len(addrs) || settled == len(addrs) || time.Now().After(deadline) {
			return got, nil
		}
		select {
		case <-ctx.Done():
			return got, fmt.Errorf("bench: %w", ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// ipJSON runs ip(8) -j with args and decodes its output into v.
func ipJSON(v any, args ...string) error {
	out, err := exec.Command("ip", append([]string{"-j"}, args...)...).Output() //nolint:gosec // fixed tool, the harness's arguments
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		return fmt.Errorf("bench: ip -j %s: %w", strings.Join(args, " "), err)
	}
	if err := json.Unmarshal(out, v); err != nil {
		return fmt.Errorf("bench: ip -j %s: %w", strings.Join(args, " "), err)
	}
	return nil
}
