package ipam

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"
)

func mustRange(t *testing.T, s string) Range {
	t.Helper()
	r, err := ParseRange(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func testPools(t *testing.T) []*Pool {
	return []*Pool{
		{Name: "default", AutoAssign: true, Ranges: []Range{mustRange(t, "198.18.100.0/30"), mustRange(t, "2001:db8:100::/126")}},
		{Name: "reserved", Ranges: []Range{mustRange(t, "198.18.101.0/29")}},
		{Name: "team-a", AutoAssign: true, Namespaces: map[string]bool{"a": true},
			Selector: labels.SelectorFromSet(labels.Set{"tier": "web"}), Ranges: []Range{mustRange(t, "198.18.102.1-198.18.102.2")}},
	}
}

func req(key string, fams ...Family) Request {
	if len(fams) == 0 {
		fams = []Family{IPv4}
	}
	return Request{Owner: Owner{Key: key, Created: time.Unix(int64(len(key)), 0)}, Namespace: "default", Families: fams}
}

func ip(s string) netip.Addr { return netip.MustParseAddr(s) }

func TestAssignBasics(t *testing.T) {
	a := New(testPools(t))
	got, err := a.Assign(req("default/one", IPv4, IPv6))
	if err != nil || len(got) != 2 || !got[0].Is4() || got[1].Is4() {
		t.Fatalf("dual-stack: %v %v", got, err)
	}
	again, err := a.Assign(req("default/one", IPv4, IPv6))
	if err != nil || again[0] != got[0] || again[1] != got[1] {
		t.Errorf("a second Assign changed the addresses: %v -> %v (%v)", got, again, err)
	}
	// Deterministic: released and asked again, the same address comes back.
	a.Release("default/one")
	back, _ := a.Assign(req("default/one", IPv4, IPv6))
	if back[0] != got[0] || back[1] != got[1] {
		t.Errorf("re-created Service got %v, first had %v", back, got)
	}
}

func TestAssignErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(a *Allocator)
		req   Request
		want  error
	}{
		{"requested outside pools", nil, func() Request { r := req("default/x"); r.Requested = []netip.Addr{ip("198.18.199.1")}; return r }(), ErrNotInPool},
		{"requested in another pool than named", nil, func() Request {
			r := req("default/x")
			r.Requested, r.Pool = []netip.Addr{ip("198.18.100.1")}, "reserved"
			return r
		}(), ErrNotInPool},
		{"requested taken", func(a *Allocator) {
			r := req("default/holder")
			r.Requested = []netip.Addr{ip("198.18.100.1")}
			mustAssign(a, r)
		}, func() Request { r := req("default/x"); r.Requested = []netip.Addr{ip("198.18.100.1")}; return r }(), ErrInUse},
		{"unknown pool", nil, func() Request { r := req("default/x"); r.Pool = "nope"; return r }(), ErrUnknownPool},
		{"pool of another namespace", nil, func() Request { r := req("default/x"); r.Pool = "team-a"; return r }(), ErrPoolNotAllowed},
		{"no IPv6 in pool", nil, func() Request { r := req("default/x", IPv6); r.Pool = "reserved"; return r }(), ErrNoPoolForFamily},
		{"exhausted", func(a *Allocator) {
			for i := range 4 {
				mustAssign(a, req(fmt.Sprintf("default/fill-%d", i)))
			}
		}, req("default/x"), ErrPoolExhausted},
		{"sharing with a port clash", func(a *Allocator) {
			r := req("default/s1")
			r.SharingKey, r.Ports = "k", []Port{{"TCP", 80}}
			r.Requested = []netip.Addr{ip("198.18.100.2")}
			mustAssign(a, r)
		}, func() Request {
			r := req("default/s2")
			r.SharingKey, r.Ports = "k", []Port{{"TCP", 80}}
			r.Requested = []netip.Addr{ip("198.18.100.2")}
			return r
		}(), ErrSharingClash},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := New(testPools(t))
			if tc.setup != nil {
				tc.setup(a)
			}
			before := a.Usage()
			_, err := a.Assign(tc.req)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if after := a.Usage(); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("a refused request changed usage: %v -> %v", before, after)
			}
		})
	}
}

func mustAssign(a *Allocator, r Request) []netip.Addr {
	got, err := a.Assign(r)
	if err != nil {
		panic(err)
	}
	return got
}

func TestPoolSelectionAndSharing(t *testing.T) {
	a := New(testPools(t))
	r := req("a/web")
	r.Namespace, r.Labels = "a", map[string]string{"tier": "web"}
	r.Pool = "team-a"
	got := mustAssign(a, r)
	if !a.pools[2].Contains(got[0]) {
		t.Errorf("named pool not used: %v", got)
	}
	// Auto-assign skips the non-auto pool and pools that do not allow the Service.
	got = mustAssign(a, req("default/plain"))
	if !a.pools[0].Contains(got[0]) {
		t.Errorf("auto-assign picked %v", got)
	}
	// Two Services with one sharing key and different ports share an address.
	s1, s2 := req("default/s1"), req("default/s2")
	s1.SharingKey, s1.Ports, s1.Compat = "dns", []Port{{"UDP", 53}}, "Cluster"
	s2.SharingKey, s2.Ports, s2.Compat = "dns", []Port{{"TCP", 53}}, "Cluster"
	g1, g2 := mustAssign(a, s1), mustAssign(a, s2)
	if g1[0] != g2[0] {
		t.Errorf("sharing key not honoured: %v %v", g1, g2)
	}
	// Different traffic policies do not share.
	s3 := req("default/s3")
	s3.SharingKey, s3.Ports, s3.Compat = "dns", []Port{{"TCP", 853}}, "Local"
	if g3 := mustAssign(a, s3); g3[0] == g1[0] {
		t.Errorf("incompatible Service joined the shared address")
	}
	// Dual-stack best effort: the pool has no IPv6, IPv4 alone is fine.
	be := req("default/be", IPv4, IPv6)
	be.Pool, be.BestEffort = "reserved", true
	if got := mustAssign(a, be); len(got) != 1 {
		t.Errorf("best effort: %v", got)
	}
}

func TestObserveKeepsOlderOwner(t *testing.T) {
	a := New(testPools(t))
	old := Owner{Key: "default/old", Created: time.Unix(100, 0)}
	young := Owner{Key: "default/young", Created: time.Unix(200, 0)}
	x := ip("198.18.100.1")
	// The newer one is seen first: it holds x until the older one shows up.
	if lost, ev := a.Observe(young, []netip.Addr{x}); lost != nil || ev != nil {
		t.Fatalf("first observe: %v %v", lost, ev)
	}
	lost, evicted := a.Observe(old, []netip.Addr{x})
	if lost != nil || len(evicted) != 1 || evicted[0] != young.Key {
		t.Fatalf("older owner: lost %v evicted %v", lost, evicted)
	}
	// Seen again, the newer one loses x, once.
	if lost, _ := a.Observe(young, []netip.Addr{x}); len(lost) != 0 {
		t.Errorf("loss reported twice: %v", lost)
	}
	// Its next Assign gives it another address; the older keeps x.
	r := req(young.Key)
	r.Created = young.Created
	got := mustAssign(a, r)
	if got[0] == x {
		t.Errorf("newer Service kept the duplicate address")
	}
	if h := a.Held(old.Key); len(h) != 1 || h[0] != x {
		t.Errorf("older Service holds %v", h)
	}
}

func TestAssignedAddressIsHeldUntilStatusMoves(t *testing.T) {
	a := New(testPools(t))
	r := req("default/mover")
	r.Requested = []netip.Addr{ip("198.18.100.1")}
	mustAssign(a, r)
	a.Observe(r.Owner, []netip.Addr{ip("198.18.100.1")})
	r.Requested = []netip.Addr{ip("198.18.100.2")}
	mustAssign(a, r)
	// The status still shows .1: nobody else may take it yet.
	other := req("default/other")
	other.Requested = []netip.Addr{ip("198.18.100.1")}
	if _, err := a.Assign(other); !errors.Is(err, ErrInUse) {
		t.Fatalf("address of a status not yet rewritten was handed out: %v", err)
	}
	a.Observe(r.Owner, []netip.Addr{ip("198.18.100.2")})
	if _, err := a.Assign(other); err != nil {
		t.Errorf("address not freed once the status moved: %v", err)
	}
}

func TestConcurrentAssignNeverDuplicates(t *testing.T) {
	pools := []*Pool{{Name: "p", AutoAssign: true, Ranges: []Range{mustRange(t, "198.18.100.0/24")}}}
	a := New(pools)
	var wg sync.WaitGroup
	results := make([]netip.Addr, 256)
	errs := make([]error, 256)
	for i := range 256 {
		wg.Go(func() {
			got, err := a.Assign(req(fmt.Sprintf("ns/svc-%d", i)))
			errs[i] = err
			if err == nil {
				results[i] = got[0]
			}
		})
	}
	wg.Wait()
	seen := map[netip.Addr]int{}
	for i, ip := range results {
		if errs[i] != nil {
			t.Fatalf("svc-%d: %v", i, errs[i])
		}
		if j, dup := seen[ip]; dup {
			t.Fatalf("svc-%d and svc-%d both got %s", i, j, ip)
		}
		seen[ip] = i
	}
	if _, err := a.Assign(req("ns/one-too-many")); !errors.Is(err, ErrPoolExhausted) {
		t.Errorf("a full /24 still gave an address: %v", err)
	}
	if u := a.Usage(); u[0].Used != 256 || u[0].Size != 256 {
		t.Errorf("usage %v", u)
	}
}

func TestAddressOutsidePoolsIsKept(t *testing.T) {
	a := New(testPools(t))
	o := Owner{Key: "default/adopted", Created: time.Unix(1, 0)}
	foreign := ip("198.18.150.7") // in no pool: written by another implementation
	a.Observe(o, []netip.Addr{foreign})
	r := req(o.Key)
	r.Owner = o
	if got := mustAssign(a, r); got[0] != foreign {
		t.Errorf("adopted address replaced by %v", got)
	}
	if out := a.OutsidePools([]netip.Addr{foreign, ip("198.18.100.1")}); len(out) != 1 || out[0] != foreign {
		t.Errorf("OutsidePools = %v", out)
	}
	// Naming a pool is an explicit choice: the Service moves into it.
	r.Pool = "reserved"
	if got := mustAssign(a, r); !a.pools[1].Contains(got[0]) {
		t.Errorf("named pool ignored: %v", got)
	}
	// A pool removed by a reload: its Services keep their addresses.
	b := New(testPools(t))
	kept := mustAssign(b, req("default/k"))
	b.SetPools(testPools(t)[1:])
	if again := mustAssign(b, req("default/k")); again[0] != kept[0] {
		t.Errorf("address of a removed pool changed: %v -> %v", kept, again)
	}
}
