package member

import (
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
