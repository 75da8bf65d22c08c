package member

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"
)

var loopback = netip.MustParseAddr("127.0.0.1")

// addresses are example InternalIPs of the member numbered i.
func addresses(i byte) []netip.Addr {
	return []netip.Addr{netip.AddrFrom4([4]byte{198, 18, 0, i}), netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 15: i})}
}

// start starts a member on 127.0.0.1 (port 0: a free one), stopped with the
// test.
func start(t *testing.T, cfg Config) *Members {
	t.Helper()
	if !cfg.Bind.IsValid() {
		cfg.Bind = netip.AddrPortFrom(loopback, 0)
	}
	m, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Shutdown)
	return m
}

func eventually(t *testing.T, within time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	begin := time.Now()
	for !cond() {
		if time.Since(begin) > within {
			t.Fatalf("not within %s: %s", within, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(begin)
}

func names(m *Members) string { return fmt.Sprint(Names(m.Alive())) }

// cluster starts agents a0..a(n-1) and an observer, all joined to a0.
func cluster(t *testing.T, n int) (agents []*Members, observer *Members) {
	t.Helper()
	for i := range n {
		agents = append(agents, start(t, Config{Name: fmt.Sprintf("a%d", i), Addresses: addresses(byte(i) + 1)}))
	}
	observer = start(t, Config{Name: "ccm", Observer: true, Addresses: addresses(100)})
	for _, m := range append(agents[1:], observer) {
		if err := m.Join([]netip.AddrPort{agents[0].LocalAddr()}); err != nil {
			t.Fatal(err)
		}
	}
	return agents, observer
}

func TestMembership(t *testing.T) {
	agents, observer := cluster(t, 3)
	all := append(slices.Clone(agents), observer)
	for i, m := range all {
		eventually(t, 5*time.Second, fmt.Sprintf("member %d sees the 3 agents", i), func() bool { return names(m) == "[a0 a1 a2]" })
		select {
		case <-m.Changed():
		default:
			t.Errorf("member %d: no change notified", i)
		}
	}
	// The metadata's addresses, as each agent gave them.
	for i, mb := range observer.Alive() {
		if fmt.Sprint(mb.Addresses) != fmt.Sprint(addresses(byte(i)+1)) {
			t.Errorf("%s: addresses %v, want %v", mb.Name, mb.Addresses, addresses(byte(i)+1))
		}
	}
	// Joining what is known costs nothing; every address of the others is
	// known.
	var seeds []netip.AddrPort
	for _, m := range all {
		seeds = append(seeds, m.LocalAddr())
	}
	if err := agents[1].Join(seeds); err != nil {
		t.Errorf("joining known members: %v", err)
	}

	// a2 crashes: no goodbye.
	bind := agents[2].LocalAddr()
	crash := time.Now()
	agents[2].Shutdown()
	for i, m := range []*Members{agents[0], agents[1], observer} {
		eventually(t, 10*time.Second, fmt.Sprintf("member %d drops the crashed a2", i), func() bool { return names(m) == "[a0 a1]" })
		t.Logf("member %d: crashed member gone after %s", i, time.Since(crash).Round(time.Millisecond))
	}

	// a2 comes back under the same name and address.
	back := start(t, Config{Name: "a2", Addresses: addresses(3), Bind: bind})
	if err := back.Join(seeds); err != nil { // its own address among them is skipped
		t.Errorf("rejoining: %v", err)
	}
	for i, m := range []*Members{agents[0], agents[1], observer, back} {
		eventually(t, 5*time.Second, fmt.Sprintf("member %d sees a2 again", i), func() bool { return names(m) == "[a0 a1 a2]" })
	}
}

func TestKeys(t *testing.T) {
	key := []byte("0123456789abcdef")
	a := start(t, Config{Name: "a0", Keys: [][]byte{key}})
	b := start(t, Config{Name: "a1", Keys: [][]byte{key}})
	if err := b.Join([]netip.AddrPort{a.LocalAddr()}); err != nil {
		t.Fatalf("same key: %v", err)
	}
	eventually(t, 5*time.Second, "same key joined", func() bool { return names(a) == "[a0 a1]" })
	for _, other := range []Config{
		{Name: "wrong", Keys: [][]byte{[]byte("fedcba9876543210")}},
		{Name: "none"},
	} {
		c := start(t, other)
		if err := c.Join([]netip.AddrPort{a.LocalAddr()}); err == nil {
			t.Errorf("%s joined", other.Name)
		}
		// Nor does the cluster join it, nor does it learn the cluster.
		time.Sleep(300 * time.Millisecond)
		if names(a) != "[a0 a1]" || names(c) != "["+other.Name+"]" {
			t.Errorf("%s: cluster sees %s, it sees %s", other.Name, names(a), names(c))
		}
	}
	if _, err := Start(t.Context(), Config{Name: "short", Keys: [][]byte{[]byte("short")}, Bind: netip.AddrPortFrom(loopback, 0)}); err == nil {
		t.Error("a 5-byte key accepted")
	}
}

// TestKeyRotation: the steps of docs/l2.md keep one membership throughout.
// A member that sends with the new key and accepts both talks with one
// that sends with the old key and accepts both, and with one that still
// knows only the old key as long as it sends with the old one.
func TestKeyRotation(t *testing.T) {
	oldKey, newKey := []byte("0123456789abcdef"), []byte("fedcba9876543210")
	onlyOld := start(t, Config{Name: "a0", Keys: [][]byte{oldKey}})
	added := start(t, Config{Name: "a1", Keys: [][]byte{oldKey, newKey}}) // step 1: new key second
	if err := added.Join([]netip.AddrPort{onlyOld.LocalAddr()}); err != nil {
		t.Fatalf("step 1: %v", err)
	}
	switched := start(t, Config{Name: "a2", Keys: [][]byte{newKey, oldKey}}) // step 2: new key first
	if err := switched.Join([]netip.AddrPort{added.LocalAddr()}); err != nil {
		t.Fatalf("step 2: %v", err)
	}
	for i, m := range []*Members{added, switched} {
		eventually(t, 5*time.Second, fmt.Sprintf("member %d sees the three", i), func() bool { return names(m) == "[a0 a1 a2]" })
	}
	done := start(t, Config{Name: "a3", Keys: [][]byte{newKey}}) // step 3: old key gone
	if err := done.Join([]netip.AddrPort{switched.LocalAddr()}); err != nil {
		t.Fatalf("step 3: %v", err)
	}
	eventually(t, 5*time.Second, "the member with the new key only joins those that accept it", func() bool {
		n := names(switched)
		return n == "[a0 a1 a2 a3]" || n == "[a1 a2 a3]"
	})
}

func TestLeaveAndContext(t *testing.T) {
	a := start(t, Config{Name: "a0"})
	b := start(t, Config{Name: "a1"})
	ctx, cancel := context.WithCancel(t.Context())
	c, err := Start(ctx, Config{Name: "a2", Bind: netip.AddrPortFrom(loopback, 0)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Shutdown)
	for _, m := range []*Members{b, c} {
		if err := m.Join([]netip.AddrPort{a.LocalAddr()}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 5*time.Second, "three agents", func() bool { return names(a) == "[a0 a1 a2]" && names(b) == "[a0 a1 a2]" })

	// Start's context ends: a goodbye, and the others drop it at once.
	gone := time.Now()
	cancel()
	eventually(t, 10*time.Second, "a2 left", func() bool { return names(a) == "[a0 a1]" && names(b) == "[a0 a1]" })
	t.Logf("a member whose context ended gone after %s", time.Since(gone).Round(time.Millisecond))

	gone = time.Now()
	if err := b.Leave(time.Second); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "a1 left", func() bool { return names(a) == "[a0]" })
	t.Logf("a member that left gone after %s", time.Since(gone).Round(time.Millisecond))
	b.Shutdown()
	b.Shutdown()
	if err := b.Leave(time.Second); err == nil {
		t.Error("leave after shutdown")
	}
}

func TestJoinUnreachable(t *testing.T) {
	a := start(t, Config{Name: "a0"})
	b := start(t, Config{Name: "a1"})
	// A port on which no member listens: take one and let it go.
	dead := start(t, Config{Name: "dead"})
	deadAddr := dead.LocalAddr()
	dead.Shutdown()
	err := b.Join([]netip.AddrPort{deadAddr, a.LocalAddr()})
	if err == nil {
		t.Error("no error for a seed without a member")
	}
	t.Logf("joining one unreachable seed: %v", err)
	eventually(t, 5*time.Second, "joined through the reachable seed", func() bool { return names(a) == "[a0 a1]" && names(b) == "[a0 a1]" })
	if err := b.Join([]netip.AddrPort{a.LocalAddr(), b.LocalAddr()}); err != nil {
		t.Errorf("joining known members again: %v", err)
	}
}

func TestStartRefuses(t *testing.T) {
	bind := netip.AddrPortFrom(loopback, 0)
	var many []netip.Addr
	for i := range 40 {
		many = append(many, addresses(byte(i))[1])
	}
	for _, cfg := range []Config{
		{Bind: bind},
		{Name: "no-bind"},
		{Name: "too-many", Bind: bind, Addresses: many},
	} {
		if m, err := Start(t.Context(), cfg); err == nil {
			m.Shutdown()
			t.Errorf("%+v started", cfg)
		}
	}
}

// TestDetectionTime measures, over several crashes, how long the others take
// to drop a crashed agent with DefaultTiming; it asserts only a loose bound,
// the log has the numbers.
func TestDetectionTime(t *testing.T) {
	if testing.Short() {
		t.Skip("several crashes of about 1.5 s each")
	}
	agents, observer := cluster(t, 3)
	watchers := []*Members{agents[0], agents[1], observer}
	eventually(t, 5*time.Second, "all see the agents", func() bool {
		return names(agents[2]) == "[a0 a1 a2]" && names(agents[0]) == "[a0 a1 a2]" && names(agents[1]) == "[a0 a1 a2]" && names(observer) == "[a0 a1 a2]"
	})
	var times []time.Duration
	for range 5 {
		bind := agents[2].LocalAddr()
		crash := time.Now()
		agents[2].Shutdown()
		for _, m := range watchers {
			eventually(t, 10*time.Second, "crashed agent dropped", func() bool { return names(m) == "[a0 a1]" })
			times = append(times, time.Since(crash))
		}
		agents[2] = start(t, Config{Name: "a2", Addresses: addresses(3), Bind: bind})
		if err := agents[2].Join([]netip.AddrPort{agents[0].LocalAddr()}); err != nil {
			t.Fatal(err)
		}
		for _, m := range append(watchers, agents[2]) {
			eventually(t, 5*time.Second, "restarted agent back", func() bool { return names(m) == "[a0 a1 a2]" })
		}
	}
	slices.Sort(times)
	t.Logf("crashed agent dropped by each of 3 members, 5 crashes: median %s, max %s, min %s",
		times[len(times)/2].Round(time.Millisecond), times[len(times)-1].Round(time.Millisecond), times[0].Round(time.Millisecond))
}

// TestNoFalseDeaths watches a healthy cluster for a while: no member may see
// an agent go.
func TestNoFalseDeaths(t *testing.T) {
	if testing.Short() {
		t.Skip("watches for 3 s")
	}
	agents, observer := cluster(t, 5)
	all := append(slices.Clone(agents), observer)
	const want = "[a0 a1 a2 a3 a4]"
	for _, m := range all {
		eventually(t, 5*time.Second, "all see the agents", func() bool { return names(m) == want })
	}
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		for i, m := range all {
			if got := names(m); got != want {
				t.Fatalf("member %d sees %s", i, got)
			}
		}
	}
}

// TestFitnessGossiped: what an agent says of its node reaches every
// member, the observer and itself included, and so does its change.
func TestFitnessGossiped(t *testing.T) {
	agents, observer := cluster(t, 3)
	all := append(slices.Clone(agents), observer)
	fitness := func(m *Members, name string) Fitness {
		for _, mb := range m.Alive() {
			if mb.Name == name {
				return mb.Fitness
			}
		}
		return Fitness{}
	}
	for i, m := range all {
		eventually(t, 5*time.Second, fmt.Sprintf("member %d sees the 3 agents", i), func() bool { return names(m) == "[a0 a1 a2]" })
	}
	if f := fitness(observer, "a1"); f.Forwards {
		t.Errorf("a1 started with the zero Fitness, seen as %v", f)
	}
	for _, want := range []Fitness{
		{Forwards: true, Reach: []netip.Prefix{netip.MustParsePrefix("198.18.0.0/24"), netip.MustParsePrefix("2001:db8::/64")}},
		{AnyAddress: true},
	} {
		if err := agents[1].SetFitness(want, time.Second); err != nil {
			t.Fatal(err)
		}
		for i, m := range all {
			eventually(t, 5*time.Second, fmt.Sprintf("member %d sees a1 %v", i, want), func() bool { return fitness(m, "a1").Equal(want) })
		}
	}
	agents[1].Shutdown()
	if err := agents[1].SetFitness(Fit, time.Second); err == nil {
		t.Error("SetFitness after Shutdown: no error")
	}
}

// TestFitnessAfterRestart: an agent restarted under its name, which the
// others still know with a higher incarnation (they gossip it, and it
// refutes), has each fitness it sets seen by the others, the last one
// included, none lost to a refutation.
func TestFitnessAfterRestart(t *testing.T) {
	agents, _ := cluster(t, 2)
	eventually(t, 5*time.Second, "a0 sees a1", func() bool { return names(agents[0]) == "[a0 a1]" })
	for i := range 20 { // the old incarnation well above a new agent's
		if err := agents[1].SetFitness(Fitness{Forwards: i%2 == 0}, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	bind := agents[1].LocalAddr()
	agents[1].Shutdown() // no goodbye: a0 still has it alive
	again := start(t, Config{Name: "a1", Addresses: addresses(2), Bind: bind})
	if err := again.Join([]netip.AddrPort{agents[0].LocalAddr()}); err != nil {
		t.Fatal(err)
	}
	seen := func(want Fitness) bool {
		for _, mb := range agents[0].Alive() {
			if mb.Name == "a1" {
				return mb.Fitness.Equal(want)
			}
		}
		return false
	}
	for _, want := range []Fitness{{Forwards: true, AnyAddress: true}, {AnyAddress: true}, {Forwards: true, AnyAddress: true}} {
		if err := again.SetFitness(want, time.Second); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, fmt.Sprintf("a0 sees the restarted a1 %v", want), func() bool { return seen(want) })
	}
}

// TestCutOff: an agent that reaches none of the other agents counts
// itself alone long before the membership declares them dead (the
// suspicion timeout is made long here to tell the two apart), one that
// reaches any of them does not, and reaching one again ends it.
func TestCutOff(t *testing.T) {
	slow := Timing{SuspicionMult: 50, IsolationTimeout: 300 * time.Millisecond}
	var agents []*Members
	for i := range 3 {
		agents = append(agents, start(t, Config{Name: fmt.Sprintf("a%d", i), Addresses: addresses(byte(i) + 1), Timing: slow}))
	}
	for _, m := range agents[1:] {
		if err := m.Join([]netip.AddrPort{agents[0].LocalAddr()}); err != nil {
			t.Fatal(err)
		}
	}
	a0 := agents[0]
	eventually(t, 5*time.Second, "a0 sees the 3 agents", func() bool { return names(a0) == "[a0 a1 a2]" })

	agents[1].Shutdown() // a crash: no goodbye
	// Ten isolation timeouts with a2 still answering: a0 is not cut off,
	// and the membership still shows a1 (suspect at most).
	for range 10 {
		time.Sleep(slow.IsolationTimeout)
		if a0.CutOff() || names(a0) != "[a0 a1 a2]" {
			t.Fatalf("with a2 answering, a0 cut off %t, sees %s", a0.CutOff(), names(a0))
		}
	}

	agents[2].Shutdown()
	eventually(t, 10*time.Second, "a0 takes itself for cut off", a0.CutOff)
	if got := names(a0); got != "[a0]" {
		t.Errorf("cut off, a0 sees %s, want only itself", got)
	}
	if n := a0.ml.NumMembers(); n != 3 {
		t.Fatalf("the membership declared the others dead first (%d members): the test cannot tell the two apart", n)
	}

	a3 := start(t, Config{Name: "a3", Addresses: addresses(4), Timing: slow})
	if err := a3.Join([]netip.AddrPort{a0.LocalAddr()}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "a0 reaches an agent again", func() bool { return !a0.CutOff() })
	if got := names(a0); got != "[a0 a1 a2 a3]" {
		t.Errorf("no longer cut off, a0 sees %s, want the membership's view again", got)
	}
}
