package ipam

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"
)

// FuzzParseRange feeds arbitrary text to ParseRange. It must never panic;
// every refusal wraps ErrBadRange; an accepted range is of one family, in
// order, round-trips through String, and Contains, Size and Nth agree.
// Seeds: testdata/fuzz/FuzzParseRange.
func FuzzParseRange(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string, n uint64) {
		r, err := ParseRange(s)
		if err != nil {
			if !errors.Is(err, ErrBadRange) {
				t.Fatalf("ParseRange(%q): refusal does not wrap ErrBadRange: %v", s, err)
			}
			return
		}
		checkRange(t, s, r, n)
	})
}

func checkRange(t *testing.T, s string, r Range, n uint64) {
	t.Helper()
	if r.Overlaps(mappedSpace) {
		t.Fatalf("ParseRange(%q) = %v: covers the IPv4-mapped space", s, r)
	}
	if !r.First.IsValid() || !r.Last.IsValid() || r.First.Is4() != r.Last.Is4() {
		t.Fatalf("ParseRange(%q) = %v: ends invalid or of two families", s, r)
	}
	if r.First.Zone() != "" || r.First.Is4In6() || r.Last.Is4In6() {
		t.Fatalf("ParseRange(%q) = %v: zoned or IPv4-mapped end", s, r)
	}
	if r.Last.Less(r.First) {
		t.Fatalf("ParseRange(%q) = %v: first after last", s, r)
	}
	again, err := ParseRange(r.String())
	if err != nil || again != r {
		t.Fatalf("ParseRange(%q) = %v, but its String %q parses to %v, %v", s, r, r.String(), again, err)
	}
	if !r.Contains(r.First) || !r.Contains(r.Last) || !r.Overlaps(r) {
		t.Fatalf("%v does not contain its ends", r)
	}
	if p := r.First.Prev(); p.IsValid() && r.Contains(p) {
		t.Fatalf("%v contains %s, before its first address", r, p)
	}
	if nx := r.Last.Next(); nx.IsValid() && r.Contains(nx) {
		t.Fatalf("%v contains %s, after its last address", r, nx)
	}
	size := r.Size()
	if size == 0 {
		t.Fatalf("%v has size 0", r)
	}
	if r.Nth(0) != r.First {
		t.Fatalf("%v: Nth(0) = %s", r, r.Nth(0))
	}
	if size < math.MaxUint64 {
		if got := r.Nth(size - 1); got != r.Last {
			t.Fatalf("%v: Nth(size-1 = %d) = %s, want the last address", r, size-1, got)
		}
	}
	n %= size
	nth := r.Nth(n)
	if !r.Contains(nth) || nth.Is4() != r.Is4() {
		t.Fatalf("%v: Nth(%d) = %s is not in the range", r, n, nth)
	}
	if FamilyOf(nth) != FamilyOf(r.First) {
		t.Fatalf("%v: Nth(%d) = %s is of family %s, the range of %s", r, n, nth, FamilyOf(nth), FamilyOf(r.First))
	}
	if n > 0 && !r.Nth(n-1).Less(nth) {
		t.Fatalf("%v: Nth(%d) = %s is not after Nth(%d) = %s", r, n, nth, n-1, r.Nth(n-1))
	}
	if pfx, err := netip.ParsePrefix(s); err == nil {
		// A CIDR covers exactly its prefix.
		if r.First != pfx.Addr() || !pfx.Contains(r.Last) || (r.Last.Next().IsValid() && pfx.Contains(r.Last.Next())) {
			t.Fatalf("ParseRange(%q) = %v is not the prefix", s, r)
		}
	}
}

// FuzzRangeOverlaps checks Overlaps against Contains on the ends.
func FuzzRangeOverlaps(f *testing.F) {
	f.Fuzz(func(t *testing.T, a, b string) {
		ra, errA := ParseRange(a)
		rb, errB := ParseRange(b)
		if errA != nil || errB != nil {
			return
		}
		want := ra.Contains(rb.First) || ra.Contains(rb.Last) || rb.Contains(ra.First) || rb.Contains(ra.Last)
		if got := ra.Overlaps(rb); got != want || rb.Overlaps(ra) != got {
			t.Fatalf("%v overlaps %v: %v, want %v (both ways)", ra, rb, got, want)
		}
	})
}

// fuzzBytes hands out small numbers from the fuzzer's bytes; past the end it
// gives 0.
type fuzzBytes struct {
	b []byte
	i int
}

func (r *fuzzBytes) next(n int) int {
	if r.i >= len(r.b) {
		return 0
	}
	v := int(r.b[r.i]) % n
	r.i++
	return v
}

func (r *fuzzBytes) more() bool { return r.i < len(r.b) }

// fuzzPools are small, so that Services compete for addresses: an
// auto-assign pool of both families, a pool only for those who name it, one
// for namespace ns-b, and one for the label tier=web.
func fuzzPools(t *testing.T) []*Pool {
	return []*Pool{
		{Name: "a", AutoAssign: true, Ranges: []Range{mustRange(t, "198.18.100.0/30"), mustRange(t, "2001:db8:100::/127")}},
		{Name: "b", Ranges: []Range{mustRange(t, "198.18.101.0-198.18.101.1")}},
		{Name: "c", AutoAssign: true, Namespaces: map[string]bool{"ns-b": true}, Ranges: []Range{mustRange(t, "198.18.102.0/31")}},
		{Name: "d", AutoAssign: true, Selector: labelSelector(t, "tier=web"), Ranges: []Range{mustRange(t, "2001:db8:103::/127")}},
	}
}

// fuzzAddrs are the addresses a request or a hand-written status may name:
// some of every pool and two outside all pools.
var fuzzAddrs = []netip.Addr{
	ip("198.18.100.0"), ip("198.18.100.3"), ip("2001:db8:100::1"), ip("198.18.101.0"),
	ip("198.18.102.1"), ip("2001:db8:103::"), ip("198.18.150.1"), ip("2001:db8:150::1"),
}

// fuzzService is one of the Services the fuzzer plays with: fixed owners
// (sharing key, traffic policy, ports) that clash in every way: s1 and s2
// share, s3's policy differs, s5's ports clash with both s1 and s2.
type fuzzService struct {
	owner     Owner
	namespace string
	labels    map[string]string
}

func fuzzServices() []fuzzService {
	tcp80, udp53, tcp443 := Port{"TCP", 80}, Port{"UDP", 53}, Port{"TCP", 443}
	web := map[string]string{"tier": "web"}
	mk := func(key, ns, sk, compat string, created int64, lbls map[string]string, ports ...Port) fuzzService {
		return fuzzService{owner: Owner{Key: ns + "/" + key, SharingKey: sk, Compat: compat, Ports: ports, Created: time.Unix(created, 0)},
			namespace: ns, labels: lbls}
	}
	return []fuzzService{
		mk("s0", "ns-a", "", "Cluster", 100, nil, tcp80),
		mk("s1", "ns-a", "k1", "Cluster", 101, web, tcp80),
		mk("s2", "ns-a", "k1", "Cluster", 101, nil, udp53),
		mk("s3", "ns-b", "k1", "Local", 102, nil, tcp443),
		mk("s4", "ns-b", "k2", "Cluster", 100, web, tcp80),
		mk("s5", "ns-b", "k1", "Cluster", 103, nil, tcp80, udp53),
	}
}

// shareable reports whether two Services may hold one address.
func shareable(a, b Owner) bool {
	return a.SharingKey != "" && a.SharingKey == b.SharingKey && a.Compat == b.Compat && !portsClash(a.Ports, b.Ports)
}

var assignErrors = []error{ErrPoolExhausted, ErrNotInPool, ErrInUse, ErrUnknownPool, ErrPoolNotAllowed, ErrNoPoolForFamily, ErrSharingClash}

// FuzzAllocator plays random sequences of Assign, Observe (the service
// controller writing a status, or a status written by hand) and Release.
// With the first byte even, each Service keeps one owner, and no address is
// ever held by two Services that may not share it; with it odd, owners
// change (ports, sharing key, policy), and what Assign hands out is still
// never held by a Service that may not share it. Refusals wrap one of the
// documented errors and change nothing; a second Assign of the same request
// gives the same addresses. Seeds: testdata/fuzz/FuzzAllocator.
func FuzzAllocator(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 {
			t.Skip("long enough")
		}
		r := &fuzzBytes{b: data}
		m := &allocModel{t: t, a: New(fuzzPools(t)), svcs: fuzzServices(), fixed: r.next(2) == 0}
		m.owners = make([]Owner, len(m.svcs))
		for i, s := range m.svcs {
			m.owners[i] = s.owner
		}
		for r.more() {
			switch r.next(3) {
			case 0:
				m.assign(r)
			case 1:
				m.observe(r)
			case 2:
				m.release(r.next(len(m.svcs)))
			}
			m.checkUsage()
			if m.fixed {
				m.checkNoClash()
			}
		}
	})
}

func labelSelector(t *testing.T, s string) labels.Selector {
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

// allocModel drives an Allocator and checks it after every step.
type allocModel struct {
	t      *testing.T
	a      *Allocator
	svcs   []fuzzService
	owners []Owner // the latest owner each Service was presented as
	fixed  bool
}

// heldAll is what every Service holds.
func (m *allocModel) heldAll() [][]netip.Addr {
	out := make([][]netip.Addr, len(m.svcs))
	for i, s := range m.svcs {
		out[i] = m.a.Held(s.owner.Key)
	}
	return out
}

func (m *allocModel) ownerFor(r *fuzzBytes, i int) Owner {
	o := m.svcs[i].owner
	if !m.fixed {
		o.SharingKey = []string{"", "k1", "k2"}[r.next(3)]
		o.Compat = []string{"Cluster", "Local"}[r.next(2)]
		o.Ports = [][]Port{{{"TCP", 80}}, {{"UDP", 53}}, {{"TCP", 80}, {"UDP", 53}}, {{"TCP", 443}}}[r.next(4)]
	}
	return o
}

func (m *allocModel) request(r *fuzzBytes, i int) Request {
	s := m.svcs[i]
	req := Request{Owner: m.ownerFor(r, i), Namespace: s.namespace, Labels: s.labels}
	req.Families = [][]Family{{IPv4}, {IPv6}, {IPv4, IPv6}, {IPv6, IPv4}}[r.next(4)]
	req.BestEffort = r.next(2) == 1
	req.Pool = []string{"", "", "a", "b", "c", "d", "nope"}[r.next(7)]
	switch r.next(4) {
	case 1:
		req.Requested = []netip.Addr{fuzzAddrs[r.next(len(fuzzAddrs))]}
	case 2:
		v4, v6 := fuzzAddrs[r.next(len(fuzzAddrs))], fuzzAddrs[r.next(len(fuzzAddrs))]
		if v4.Is4() != v6.Is4() {
			req.Requested = []netip.Addr{v4, v6}
		}
	}
	return req
}

func (m *allocModel) assign(r *fuzzBytes) {
	t := m.t
	i := r.next(len(m.svcs))
	req := m.request(r, i)
	before := m.heldAll()
	got, err := m.a.Assign(req)
	m.owners[i] = req.Owner
	if err != nil {
		known := false
		for _, e := range assignErrors {
			known = known || errors.Is(err, e)
		}
		if !known {
			t.Fatalf("Assign(%+v): error wraps none of the documented errors: %v", req, err)
		}
		if after := m.heldAll(); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatalf("a refused Assign(%+v) changed what Services hold: %v -> %v (%v)", req, before, after, err)
		}
		return
	}
	m.checkAssigned(req, got, before[i])
	again, err := m.a.Assign(req)
	if err != nil || fmt.Sprint(again) != fmt.Sprint(got) {
		t.Fatalf("Assign(%+v) twice: %v, then %v (%v)", req, got, again, err)
	}
}

// checkAssigned checks what Assign handed to req: one address per family
// asked for (best effort may drop the later ones), the requested ones, each
// in a pool or already held by the Service, none held by a Service that may
// not share it.
func (m *allocModel) checkAssigned(req Request, got, heldBefore []netip.Addr) {
	t := m.t
	if len(got) == 0 || len(got) > len(req.Families) || (len(got) < len(req.Families) && !req.BestEffort) {
		t.Fatalf("Assign(%+v) = %v: wrong number of addresses", req, got)
	}
	if FamilyOf(got[0]) != req.Families[0] {
		t.Fatalf("Assign(%+v) = %v: the first family is missing", req, got)
	}
	for _, ip := range got {
		for _, want := range req.Requested {
			if FamilyOf(want) == FamilyOf(ip) && want != ip {
				t.Fatalf("Assign(%+v) = %v: %s asked for", req, got, want)
			}
		}
		inPool := false
		for _, p := range m.a.Pools() {
			inPool = inPool || p.Contains(ip)
		}
		wasHeld := false
		for _, h := range heldBefore {
			wasHeld = wasHeld || h == ip
		}
		if !inPool && !wasHeld {
			t.Fatalf("Assign(%+v) = %v: %s is in no pool and was not held", req, got, ip)
		}
		for j, held := range m.heldAll() {
			if m.svcs[j].owner.Key == req.Key {
				continue
			}
			for _, h := range held {
				if h == ip && !shareable(req.Owner, m.owners[j]) {
					t.Fatalf("Assign(%+v) gave %s, held by %+v, which may not share it", req, ip, m.owners[j])
				}
			}
		}
	}
}

// observe presents a status: what the Service holds (the service controller
// wrote it) or addresses picked by the fuzzer (written by hand).
func (m *allocModel) observe(r *fuzzBytes) {
	t := m.t
	i := r.next(len(m.svcs))
	o := m.ownerFor(r, i)
	status := m.a.Held(o.Key)
	if r.next(2) == 1 {
		status = nil
		for range r.next(3) {
			status = append(status, fuzzAddrs[r.next(len(fuzzAddrs))])
		}
	}
	m.a.Observe(o, status)
	m.owners[i] = o
	held := m.a.Held(o.Key)
	for _, ip := range status {
		kept := false
		for _, h := range held {
			kept = kept || h == ip
		}
		olderClash := false
		for j, other := range m.heldAll() {
			if j == i {
				continue
			}
			for _, h := range other {
				if h != ip || shareable(o, m.owners[j]) {
					continue
				}
				if kept {
					t.Fatalf("Observe(%+v, %v) kept %s, which %+v holds and may not share", o, status, ip, m.owners[j])
				}
				olderClash = olderClash || newer(o, m.owners[j])
			}
		}
		if !kept && !olderClash {
			t.Fatalf("Observe(%+v, %v) dropped %s, though no older Service holds it", o, status, ip)
		}
	}
}

func (m *allocModel) release(i int) {
	t := m.t
	key := m.svcs[i].owner.Key
	before := m.a.Held(key)
	freed := m.a.Release(key)
	if h := m.a.Held(key); len(h) != 0 {
		t.Fatalf("Release(%s): still holds %v", key, h)
	}
	all := m.heldAll()
	holds := func(ip netip.Addr) bool {
		for _, held := range all {
			for _, h := range held {
				if h == ip {
					return true
				}
			}
		}
		return false
	}
	for _, ip := range before {
		isFreed := false
		for _, f := range freed {
			isFreed = isFreed || f == ip
		}
		if isFreed == holds(ip) {
			t.Fatalf("Release(%s) of %v freed %v: %s freed %v, held by another %v", key, before, freed, ip, isFreed, holds(ip))
		}
	}
}

// checkUsage checks that Usage counts exactly the held addresses of each pool.
func (m *allocModel) checkUsage() {
	held := map[netip.Addr]bool{}
	for _, h := range m.heldAll() {
		for _, ip := range h {
			held[ip] = true
		}
	}
	for _, u := range m.a.Usage() {
		n := 0
		for ip := range held {
			for _, p := range m.a.Pools() {
				if p.Name == u.Pool && p.Contains(ip) && FamilyOf(ip) == u.Family {
					n++
				}
			}
		}
		if n != u.Used {
			m.t.Fatalf("usage of %s %s: %d, but Services hold %d of its addresses", u.Pool, u.Family, u.Used, n)
		}
	}
}

// checkNoClash checks that no two Services hold an address they may not share.
func (m *allocModel) checkNoClash() {
	all := m.heldAll()
	for i := range all {
		for j := i + 1; j < len(all); j++ {
			for _, a := range all[i] {
				for _, b := range all[j] {
					if a == b && !shareable(m.owners[i], m.owners[j]) {
						m.t.Fatalf("%s and %s both hold %s and may not share it", m.owners[i].Key, m.owners[j].Key, a)
					}
				}
			}
		}
	}
}
