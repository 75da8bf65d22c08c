package l2

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	l2resp "github.com/metal-ccm/metal-ccm/pkg/l2"
	"github.com/metal-ccm/metal-ccm/pkg/l2/member"
)

type fakeConflicts struct{ list []l2resp.Conflict }

func (f *fakeConflicts) Conflicts() []l2resp.Conflict      { return f.list }
func (f *fakeConflicts) ConflictsChanged() <-chan struct{} { return nil }

// TestConflictsGossip: the agent's metadata carries fitness.go's fitness
// with this node's MACs and its conflicts (at most MaxConflicts), sent
// again only when something changed; the bound members' MACs are peers,
// for peerMemory after they were last seen.
func TestConflictsGossip(t *testing.T) {
	mac := net.HardwareAddr{0x02, 0, 0, 0, 0, 1}
	var sent []member.Fitness
	src := &fakeConflicts{}
	c := newConflicts(func() ([]net.HardwareAddr, error) { return []net.HardwareAddr{mac}, nil },
		func(f member.Fitness) error { sent = append(sent, f); return nil })
	c.source = src
	ctx := context.Background()

	c.update(ctx)
	if err := c.setFitness(member.Fitness{Forwards: true}); err != nil {
		t.Fatal(err)
	}
	c.update(ctx) // nothing new
	for i := range member.MaxConflicts + 2 {
		src.list = append(src.list, l2resp.Conflict{Addr: netip.AddrFrom4([4]byte{198, 18, 0, byte(i)}), MAC: mac})
	}
	c.update(ctx)
	if len(sent) != 3 {
		t.Fatalf("sent %d times: %v; want 3 (MACs, fitness, conflicts)", len(sent), sent)
	}
	last := sent[2]
	if !last.Forwards || len(last.MACs) != 1 || len(last.Conflicts) != member.MaxConflicts {
		t.Errorf("last metadata %v, want forwards, 1 MAC, %d conflicts", last, member.MaxConflicts)
	}
	if c.count.Load() != int64(len(src.list)) {
		t.Errorf("metric counts %d, want all %d conflicts", c.count.Load(), len(src.list))
	}
	other := net.HardwareAddr{0x02, 0, 0, 0, 0, 2}
	if c.isPeer(other) {
		t.Error("a peer before any round")
	}
	now := time.Now()
	c.setPeers([]net.HardwareAddr{other}, now)
	if !c.isPeer(other) || c.isPeer(net.HardwareAddr{0x02, 0, 0, 0, 0, 3}) {
		t.Error("peers not as the round gave them")
	}
	// A member gone (dead, cut off) stays a peer for a while: it may still
	// answer for what another node takes over.
	c.setPeers(nil, now.Add(peerMemory))
	if !c.isPeer(other) {
		t.Error("a member just gone is no longer a peer")
	}
	c.setPeers(nil, now.Add(peerMemory+time.Second))
	if c.isPeer(other) {
		t.Error("a member gone for longer than peerMemory is still a peer")
	}
}

// TestHoldsGossip: with l2.failback Sticky the metadata carries the
// addresses the agent answers for beside the rest, sent again only when
// they change.
func TestHoldsGossip(t *testing.T) {
	var sent []member.Fitness
	c := newConflicts(func() ([]net.HardwareAddr, error) { return nil, nil },
		func(f member.Fitness) error { sent = append(sent, f); return nil })
	if err := c.setFitness(member.Fitness{Forwards: true}); err != nil {
		t.Fatal(err)
	}
	held := []netip.Addr{netip.MustParseAddr("198.18.6.1"), netip.MustParseAddr("2001:db8:6::1")}
	for range 2 {
		if err := c.setHolds(held); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.setHolds(nil); err != nil {
		t.Fatal(err)
	}
	if len(sent) != 3 {
		t.Fatalf("sent %d times: %v; want 3 (fitness, holds, none held)", len(sent), sent)
	}
	if got := sent[1]; !got.Forwards || !got.Held(held[0]) || !got.Held(held[1]) {
		t.Errorf("metadata %v, want forwards and both addresses held", got)
	}
	if got := sent[2]; !got.Forwards || len(got.Holds) != 0 {
		t.Errorf("metadata %v, want forwards and nothing held", got)
	}
}
