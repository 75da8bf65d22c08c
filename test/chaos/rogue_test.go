package chaos

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/l2/member"
	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

const l2RogueFault = "L2: rogue members on the segment, one without the key and one with it claiming the dead owner's name and addresses from another address"

// rogueFor is how long the rogue members stay while the client asks.
const rogueFor = 5 * time.Second

// rogue kills the owner's agent, waits for the next node to answer, then
// starts two members of the membership library in the client's namespace:
// one without the key, whose join must fail, and one with the key that
// claims the dead owner's name and InternalIPs from the client's address
// (the agents must ignore it: not bound). While they stay, the client
// asks afresh every l2Ask under a request loop and every answer for the
// address is captured: one that is not the next node's MAC is an address
// moved (res.changed).
func (f l2Fault) rogue(t *testing.T, res *result, keyFile string) {
	t.Helper()
	keys, err := member.ReadKeys(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	f.c.Agents[f.owner].Kill()
	defer func() {
		if err := f.c.Agents[f.owner].Restart(); err != nil {
			t.Fatal(err)
		}
		f.c.WaitMAC(t, f.vip, f.owner, 30*time.Second)
		f.c.WaitAnswers(t, f.vip)
	}()
	f.c.WaitMAC(t, f.vip, f.next, 10*time.Second)
	f.c.WaitAnswers(t, f.vip)
	want, err := f.c.NodeMAC(f.next)
	if err != nil {
		t.Fatal(err)
	}
	owner := f.c.RealNodes[f.owner].Name
	claims := []netip.Addr{netlab.L2NodeAddr(netlab.IPv4, f.owner), netlab.L2NodeAddr(netlab.IPv6, f.owner)}
	seed := netip.AddrPortFrom(netlab.L2NodeAddr(netlab.IPv4, f.next), config.DefaultMemberlistPort)
	bind := netip.AddrPortFrom(netlab.L2ClientAddr(netlab.IPv4), 0)

	watch, err := f.c.WatchARPReplies(context.Background(), f.vip)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	loop := f.c.StartFailoverLoop(f.vip)
	start := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	joinOne := func(name string, keys [][]byte) (*member.Members, error) {
		var m *member.Members
		err := framework.RunInNetNS(f.c.ClientNamespace(), func() error {
			var err error
			if m, err = member.Start(ctx, member.Config{Name: name, Addresses: claims, Bind: bind, Keys: keys,
				Fitness: member.Fitness{Forwards: true, AnyAddress: true}}); err != nil {
				return err
			}
			return m.Join([]netip.AddrPort{seed})
		})
		return m, err
	}
	unkeyed, err := joinOne(owner, nil)
	if unkeyed != nil {
		defer unkeyed.Shutdown()
	}
	if err == nil {
		t.Errorf("a member without the key joined the membership")
	}
	keyed, err := joinOne(owner, keys)
	if keyed != nil {
		defer keyed.Shutdown()
	}
	if err != nil {
		t.Fatalf("a member with the key could not join (the test's premise): %v", err)
	}
	ignored := 0
	for time.Since(start) < rogueFor {
		if err := f.c.FlushClientNeighbors(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(l2Ask)
		ignored = max(ignored, ignoredMembers(t, f.c, f.next))
	}
	reqs := loop.StopAfter(0)
	keyed.Shutdown()
	moved := 0
	for _, r := range watch.Replies() {
		if !bytes.Equal(r.MAC, want) {
			moved++
		}
	}
	res.injected++
	res.requests += len(reqs)
	res.lost += reqs.Failed(start)
	res.changed += moved
	if moved == 0 && reqs.Failed(start) == 0 && ignored > 0 {
		res.survived++
	}
	t.Logf("%s (%s): %d answers from another MAC than %s's, %d of %d requests lost, the next node's agent ignores %d members",
		res.fault, f.vip, moved, f.c.RealNodes[f.next].Name, reqs.Failed(start), len(reqs), ignored)
	if moved > 0 {
		t.Errorf("%s: %d answers for %s from another node than %s", res.fault, moved, f.vip, f.c.RealNodes[f.next].Name)
	}
	if ignored == 0 {
		t.Errorf("%s: the next node's agent ignores no member with the rogue in the membership", res.fault)
	}
}

// ignoredMembers is metal_ccm_agent_l2_ignored_members of node i's agent.
func ignoredMembers(t *testing.T, c *netlab.L2Cluster, i int) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	page, err := c.NodeRun(ctx, i, "curl", "-sS", "--max-time", "2", "http://127.0.0.1:10263/metrics")
	if err != nil {
		t.Fatal(err)
	}
	v, ok := framework.MetricValue(page, "metal_ccm_agent_l2_ignored_members")
	if !ok {
		t.Fatalf("node %d's agent reports no metal_ccm_agent_l2_ignored_members", i)
	}
	return int(v)
}

// rogueNote is the row's note.
var rogueNote = fmt.Sprintf("changed: answers for the address from another MAC than the next node's while the rogues stay (%s, the client asking afresh every %s); goal: none, and the keyless member refused", rogueFor, l2Ask)
