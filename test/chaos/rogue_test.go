package chaos

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
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
	clientNS := f.c.ClientNamespace()
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

	watch, err := f.c.WatchARPReplies(context.Background(), f.vip)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	loop := f.c.StartFailoverLoop(f.vip)
	start := time.Now()
	// The membership takes a dead member's name over for another address
	// only DeadNodeReclaimTime (1 s) after the death: the rogue claiming it
	// sooner would be refused by memberlist itself, not by binding, and
	// the test would show nothing.
	time.Sleep(2 * time.Second)
	unkeyed := startRogue(t, clientNS, "rogue-nokey", owner, claims, seed, "")
	keyed := startRogue(t, clientNS, "rogue-key", owner, claims, seed, keyFile)
	if !unkeyed.wait(t, rogueRefused) {
		t.Errorf("a member without the key joined the membership:\n%s", unkeyed.LogTail(5))
	}
	if !keyed.wait(t, rogueJoined) {
		t.Fatalf("a member with the key could not join (the test's premise):\n%s", keyed.LogTail(5))
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
	keyed.Stop(time.Second)
	unkeyed.Stop(time.Second)
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
	v, ok, err := c.AgentMetric(ctx, i, "metal_ccm_agent_l2_ignored_members")
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Fatalf("node %d's agent reports no metal_ccm_agent_l2_ignored_members", i)
	}
	return int(v)
}

// The rogue's lines in its log, and its environment (rogueMain).
const (
	rogueJoined  = "rogue: joined"
	rogueRefused = "rogue: refused"
	rogueEnv     = "METAL_CCM_CHAOS_ROGUE" // name,claim,claim,...,seed[,key file]
)

// rogue is a rogue member: this test binary run again in the client's
// namespace (rogueMain), so that all of its sockets are there.
type rogue struct{ *framework.Process }

// startRogue starts a rogue member named name claiming claims, joining
// through seed, keyed with keyFile's keys ("": none); the test's cleanup
// stops it by its PID.
func startRogue(t *testing.T, clientNS, label, name string, claims []netip.Addr, seed netip.AddrPort, keyFile string) rogue {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	spec := []string{name}
	for _, c := range claims {
		spec = append(spec, c.String())
	}
	spec = append(spec, seed.String(), keyFile)
	p, err := framework.StartProcess(label, filepath.Join(t.TempDir(), label+".log"), false, "nsenter",
		"--net="+filepath.Join("/run/netns", clientNS), "--", "env", rogueEnv+"="+strings.Join(spec, ","), self, "-test.run=^$")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(time.Second) })
	return rogue{p}
}

// wait waits up to 10 s for the rogue to say it joined or was refused,
// and reports whether it said line.
func (r rogue) wait(t *testing.T, line string) bool {
	t.Helper()
	for begin := time.Now(); time.Since(begin) < 10*time.Second; time.Sleep(50 * time.Millisecond) {
		if r.LogContains(rogueJoined) || r.LogContains(rogueRefused) {
			return r.LogContains(line)
		}
	}
	t.Fatalf("%s said neither %q nor %q within 10 s:\n%s", r.Name, rogueJoined, rogueRefused, r.LogTail(5))
	return false
}

// rogueMain is the rogue member's main, when rogueEnv is set: it joins
// the membership as the spec says, prints whether it was let in, and
// stays until it is stopped.
func rogueMain(spec string) int {
	f := strings.Split(spec, ",")
	if len(f) < 4 {
		fmt.Fprintln(os.Stderr, "rogue: spec: name,claims...,seed,keyfile")
		return 2
	}
	var claims []netip.Addr
	for _, c := range f[1 : len(f)-2] {
		claims = append(claims, netip.MustParseAddr(c))
	}
	seed := netip.MustParseAddrPort(f[len(f)-2])
	keys, err := member.ReadKeys(f[len(f)-1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "rogue:", err)
		return 2
	}
	m, err := member.Start(context.Background(), member.Config{Name: f[0], Addresses: claims, Keys: keys,
		Bind: netip.AddrPortFrom(netlab.L2ClientAddr(netlab.IPv4), 0), Fitness: member.Fitness{Forwards: true, AnyAddress: true}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "rogue:", err)
		return 2
	}
	if err := m.Join([]netip.AddrPort{seed}); err != nil {
		fmt.Println(rogueRefused+":", err)
	} else {
		fmt.Println(rogueJoined)
	}
	select {} // until stopped
}

// rogueNote is the row's note.
var rogueNote = fmt.Sprintf("changed: answers for the address from another MAC than the next node's while the rogues stay (%s, the client asking afresh every %s); goal: none, and the keyless member refused", rogueFor, l2Ask)
