package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// l2Detection bounds, in these tests, how long the agents take to see that
// one of them is gone (the membership's detection, about 1.2 to 1.8 s on a
// busy machine) and a new owner's gratuitous ARP / NA to reach the client.
const l2Detection = 3 * time.Second

// l2Node is the name of the L2 lab's node i.
func l2Node(i int) string { return fmt.Sprintf("l2-node%d", i) }

// TestL2Agents runs the real node agent in the three node namespaces of an
// L2 lab (a bridge as the switch, a client on it, no router), with the
// agents' least-privilege identity: for each address of a Service (both
// families), the client's ARP and NDP resolve it to the MAC of the node
// rendezvous hashing chooses; SIGKILL of that node's agent moves the
// address to the next choice within the detection time (gratuitous ARP,
// unsolicited NA), and it returns when the agent is back; a node whose
// membership traffic is cut (but not the client's) falls silent, and two
// MACs never answer at once for longer than the detection time.
func TestL2Agents(t *testing.T) {
	lab := netlab.NewL2(t, netlab.L2Options{Nodes: 3})
	ctx := context.Background()
	var where []agentPlace
	for i := range lab.Nodes {
		name := l2Node(i)
		if _, err := framework.CreateReadyNode(ctx, client, name,
			netlab.L2NodeAddr(netlab.IPv4, i).String(), netlab.L2NodeAddr(netlab.IPv6, i).String()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		where = append(where, agentPlace{node: name, netns: lab.NodeNamespace(i)})
	}
	cfg := filepath.Join(t.TempDir(), "cloud-config.yaml")
	if err := os.WriteFile(cfg, []byte(netlab.L2TestCloudConfig(t, "healthChecks:\n  enabled: false\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	agents := startAgentsIn(t, where, cfg)

	// The test writes the Service's status, as the CCM would: the agents
	// answer for what the status shows.
	vips := []netip.Addr{netlab.L2VIP(netlab.IPv4, 3), netlab.L2VIP(netlab.IPv6, 3)}
	// In a namespace of its own, whose Services go with the test: a Service
	// left behind would be served by the next test's CCM.
	ns := framework.NewNamespace(t, client, framework.NamespaceName(t), framework.ReleaseServices(30*time.Second))
	svc := framework.CreateLoadBalancer(t, client, ns, "l2-web", framework.DualStack)
	setIngress(t, svc, vips)

	all := []int{0, 1, 2}
	for _, vip := range vips {
		owner := netlab.L2Owner(vip, all)
		took := lab.WaitClientMAC(t, vip, owner, time.Minute)
		t.Logf("%s answered by node %d (%s after the status write, agents starting)", vip, owner, took.Round(time.Millisecond))
	}

	t.Run("SIGKILL of the answering agent: the next node takes over, and gives back", func(t *testing.T) {
		vip := vips[0]
		owner, next, watch := l2Fault(t, lab, vip)
		defer watch.Close()
		agents[owner].Kill() // SIGKILL
		took := lab.WaitClientMAC(t, vip, next, 10*time.Second)
		t.Logf("node %d's agent killed: node %d answers %s after %s", owner, next, vip, took.Round(time.Millisecond))
		if took > l2Detection {
			t.Errorf("takeover took %s, more than %s", took, l2Detection)
		}
		p, err := agents[owner].start()
		if err != nil {
			t.Fatal(err)
		}
		agents[owner].Process = p
		lab.WaitClientMAC(t, vip, owner, 30*time.Second)
		if o := netlab.OverlapOfMACs(watch.Replies(), time.Second); o > l2Detection {
			t.Errorf("two nodes answered %s together for %s", vip, o)
		}
	})

	t.Run("a node cut off from the others falls silent", func(t *testing.T) {
		vip := vips[1]
		owner, next, watch := l2Fault(t, lab, vip)
		defer watch.Close()
		undo, err := lab.BlockBetweenNodes(owner, 7946)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = undo() }()
		took := lab.WaitClientMAC(t, vip, next, 10*time.Second)
		t.Logf("node %d cut off: node %d answers %s after %s", owner, next, vip, took.Round(time.Millisecond))
		// The cut-off node keeps quiet: the client, asking afresh, hears
		// only the new owner.
		time.Sleep(l2Detection)
		if err := lab.FlushClientNeighbors(); err != nil {
			t.Fatal(err)
		}
		lab.WaitClientMAC(t, vip, next, 5*time.Second)
		if o := netlab.OverlapOfMACs(watch.Replies(), time.Second); o > l2Detection {
			t.Errorf("two nodes answered %s together for %s", vip, o)
		}
		if err := undo(); err != nil {
			t.Fatal(err)
		}
		lab.WaitClientMAC(t, vip, owner, 30*time.Second)
	})

	t.Run("an address written into the status outside the pools gets no answer", func(t *testing.T) {
		// On the segment, but past the pool's eight addresses.
		in, outside := netlab.L2VIP(netlab.IPv4, 4), []netip.Addr{netlab.L2VIP(netlab.IPv4, 8), netlab.L2VIP(netlab.IPv6, 8)}
		var watches []*netlab.ReplyWatch
		for _, a := range outside {
			w, err := lab.WatchARPReplies(context.Background(), a)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			watches = append(watches, w)
		}
		setIngress(t, svc, append([]netip.Addr{in}, outside...))
		// The agents followed the write: the new address in the pool is
		// answered.
		lab.WaitClientMAC(t, in, netlab.L2Owner(in, all), 30*time.Second)
		for _, a := range outside {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			err := lab.ClientPing(ctx, a)
			cancel()
			if err == nil {
				t.Errorf("%s answers a ping", a)
			}
		}
		for i, w := range watches {
			if r := w.Replies(); len(r) > 0 {
				t.Errorf("%s was answered on the segment: %v", outside[i], r)
			}
		}
		setIngress(t, svc, vips)
	})

	t.Run("a host outside the cluster takes an address: a Warning Event, the nodes leave it until it is gone", func(t *testing.T) {
		testL2Conflict(t, lab, svc, vips[0], cfg)
	})
}

// l2Fault is where a fault test of vip starts: the node answering for it
// among all three, the one that must take over, and a capture of the
// answers the client sees.
func l2Fault(t *testing.T, lab *netlab.L2Lab, vip netip.Addr) (owner, next int, watch *netlab.ReplyWatch) {
	t.Helper()
	all := []int{0, 1, 2}
	owner = netlab.L2Owner(vip, all)
	next = netlab.L2Owner(vip, slices.DeleteFunc(all, func(i int) bool { return i == owner }))
	watch, err := lab.WatchARPReplies(context.Background(), vip)
	if err != nil {
		t.Fatal(err)
	}
	return owner, next, watch
}

// setIngress writes addrs into the Service's status.
func setIngress(t *testing.T, svc *v1.Service, addrs []netip.Addr) {
	t.Helper()
	var ing []v1.LoadBalancerIngress
	for _, a := range addrs {
		ing = append(ing, v1.LoadBalancerIngress{IP: a.String()})
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"loadBalancer": map[string]any{"ingress": ing}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Services(svc.Namespace).Patch(context.Background(), svc.Name, types.MergePatchType,
		patch, metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
}
