package ipam

import (
	"errors"
	"fmt"
	"hash/fnv"
	"net/netip"
	"slices"
	"sync"
	"time"
)

// Port is one port a Service serves on a shared address.
type Port struct {
	Protocol string
	Port     int32
}

// Owner is a Service as the allocator sees it.
type Owner struct {
	// Key is namespace/name.
	Key string
	// SharingKey lets Services with the same non-empty key share an address.
	SharingKey string
	// Compat must be equal among Services sharing an address (for example
	// their traffic policy).
	Compat string
	// Ports must not clash among Services sharing an address.
	Ports []Port
	// Created orders claims: of two Services holding one address by mistake,
	// the older keeps it.
	Created time.Time
}

// Request asks for the addresses of one Service.
type Request struct {
	Owner
	Namespace string
	Labels    map[string]string
	// Families are wanted in order; the first is required, the others too
	// unless BestEffort.
	Families   []Family
	BestEffort bool
	// Requested addresses, at most one per family.
	Requested []netip.Addr
	// Pool restricts the choice to one named pool.
	Pool string
}

// Allocator hands out addresses. Its methods are safe for concurrent use:
// two concurrent requests never get the same address unless they may share it.
type Allocator struct {
	mu    sync.Mutex
	pools []*Pool
	ips   map[netip.Addr]map[string]*Owner // address -> holders by key
	svcs  map[string]*holding
}

// holding is what one Service holds: addresses seen in its status and
// addresses assigned to it that its status may not show yet.
type holding struct {
	observed []netip.Addr
	assigned []netip.Addr
	owner    Owner
	lost     map[netip.Addr]bool // addresses of its status an older Service holds
}

func (h *holding) all() []netip.Addr {
	out := slices.Clone(h.assigned)
	for _, ip := range h.observed {
		if !slices.Contains(out, ip) {
			out = append(out, ip)
		}
	}
	return out
}

// New builds an allocator over pools, in order of preference.
func New(pools []*Pool) *Allocator {
	return &Allocator{pools: pools, ips: map[netip.Addr]map[string]*Owner{}, svcs: map[string]*holding{}}
}

// Pools returns the pools.
func (a *Allocator) Pools() []*Pool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.pools
}

// SetPools replaces the pools (a config reload). What Services hold is kept,
// also addresses that are in no pool any more.
func (a *Allocator) SetPools(pools []*Pool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pools = pools
}

// OutsidePools returns the addresses of ips that are in no pool.
func (a *Allocator) OutsidePools(ips []netip.Addr) []netip.Addr {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []netip.Addr
	for _, ip := range ips {
		if a.poolOf(ip) == nil {
			out = append(out, ip)
		}
	}
	return out
}

func (a *Allocator) poolOf(ip netip.Addr) *Pool {
	for _, p := range a.pools {
		if p.Contains(ip) {
			return p
		}
	}
	return nil
}

// Held returns the addresses a Service holds.
func (a *Allocator) Held(key string) []netip.Addr {
	a.mu.Lock()
	defer a.mu.Unlock()
	if h := a.svcs[key]; h != nil {
		return h.all()
	}
	return nil
}

// Observe records the addresses a Service's status shows. An address an older
// Service holds, and cannot share, is not taken: it is returned as lost, once.
// An address a newer Service holds by mistake is taken from it, and that
// Service's key is returned in evicted.
func (a *Allocator) Observe(o Owner, status []netip.Addr) (lost []netip.Addr, evicted []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	h := a.holding(o)
	h.owner = o
	var keep []netip.Addr
	for _, ip := range status {
		others := a.clashing(ip, o)
		blocked := false // an older Service holds ip
		for _, other := range others {
			if newer(o, *other) {
				blocked = true
			}
		}
		if blocked {
			// Also what it held before: its sharing key or ports may have
			// changed since, so that it may no longer share ip.
			if !h.lost[ip] {
				lost = append(lost, ip)
			}
			a.drop(o.Key, ip)
			continue
		}
		for _, other := range others {
			a.drop(other.Key, ip)
			evicted = append(evicted, other.Key)
		}
		keep = append(keep, ip)
	}
	for _, ip := range h.observed {
		if !slices.Contains(keep, ip) && !slices.Contains(h.assigned, ip) {
			a.unclaim(o.Key, ip)
		}
	}
	h.observed = keep
	if slices.Equal(keep, h.assigned) {
		h.assigned = nil
	}
	for _, ip := range keep {
		a.claim(ip, &h.owner)
	}
	return lost, evicted
}

// newer reports whether a was created after b (ties broken by key).
func newer(a, b Owner) bool {
	if !a.Created.Equal(b.Created) {
		return a.Created.After(b.Created)
	}
	return a.Key > b.Key
}

// Release frees everything a Service holds and returns the addresses that
// nobody holds any more.
func (a *Allocator) Release(key string) []netip.Addr {
	a.mu.Lock()
	defer a.mu.Unlock()
	h := a.svcs[key]
	if h == nil {
		return nil
	}
	var freed []netip.Addr
	for _, ip := range h.all() {
		a.unclaim(key, ip)
		if len(a.ips[ip]) == 0 {
			freed = append(freed, ip)
		}
	}
	delete(a.svcs, key)
	return freed
}

// Wants reports whether ip, were it free, could be given to req by a pool.
func (a *Allocator) Wants(req Request, ip netip.Addr) bool {
	f := FamilyOf(ip)
	wanted := false
	for _, rf := range req.Families {
		wanted = wanted || rf == f
	}
	if !wanted {
		return false
	}
	for _, r := range req.Requested {
		if FamilyOf(r) == f {
			return r == ip
		}
	}
	for _, p := range a.pools {
		if p.Contains(ip) {
			return p.Allows(req.Namespace, req.Labels) && (p.Name == req.Pool || (req.Pool == "" && p.AutoAssign))
		}
	}
	return false
}

// Assign returns the addresses of a Service: the ones it asks for, else the
// ones it holds while they still fit the request, else free ones. On error
// nothing changes.
func (a *Allocator) Assign(req Request) ([]netip.Addr, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	h := a.holding(req.Owner)
	h.owner = req.Owner
	var out []netip.Addr
	for i, f := range req.Families {
		ip, err := a.pick(req, h, f)
		if err != nil {
			if i > 0 && req.BestEffort && isFamilyMiss(err) {
				continue
			}
			return nil, err
		}
		out = append(out, ip)
	}
	for _, ip := range h.assigned {
		if !slices.Contains(out, ip) && !slices.Contains(h.observed, ip) {
			a.unclaim(req.Key, ip)
		}
	}
	h.assigned = out
	for _, ip := range out {
		a.claim(ip, &h.owner)
		delete(h.lost, ip) // it was free again, and now it is this Service's
	}
	return out, nil
}

func isFamilyMiss(err error) bool {
	return errors.Is(err, ErrNoPoolForFamily) || errors.Is(err, ErrPoolExhausted)
}

func (a *Allocator) pick(req Request, h *holding, f Family) (netip.Addr, error) {
	for _, ip := range req.Requested {
		if FamilyOf(ip) == f {
			return a.pickRequested(req, ip)
		}
	}
	// Keep what the Service holds while it still fits, and, unless it names
	// a pool, an address that is in no pool at all (adopted from another
	// implementation, or of a pool removed since): moving it would break
	// the Service's clients.
	for _, ip := range h.all() {
		if FamilyOf(ip) != f || h.lost[ip] || a.usable(ip, req.Owner) != nil {
			continue
		}
		if a.fits(req, ip) || (req.Pool == "" && a.poolOf(ip) == nil) {
			return ip, nil
		}
	}
	pools, err := a.candidates(req, f)
	if err != nil {
		return netip.Addr{}, err
	}
	// Join a Service with the same sharing key.
	if req.SharingKey != "" {
		for ip, holders := range a.ips {
			if FamilyOf(ip) != f || len(holders) == 0 || !inAny(pools, ip) {
				continue
			}
			for _, o := range holders {
				if o.SharingKey == req.SharingKey && a.usable(ip, req.Owner) == nil {
					return ip, nil
				}
			}
		}
	}
	for _, p := range pools {
		if ip, ok := a.free(p, f, req.Key); ok {
			return ip, nil
		}
	}
	names := make([]string, 0, len(pools))
	for _, p := range pools {
		names = append(names, p.Name)
	}
	return netip.Addr{}, fmt.Errorf("assign %s address from pools %v: %w", f, names, ErrPoolExhausted)
}

func inAny(pools []*Pool, ip netip.Addr) bool {
	for _, p := range pools {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

func (a *Allocator) pickRequested(req Request, ip netip.Addr) (netip.Addr, error) {
	var in *Pool
	for _, p := range a.pools {
		if p.Contains(ip) {
			in = p
			break
		}
	}
	switch {
	case in == nil:
		return netip.Addr{}, fmt.Errorf("requested address %s: %w", ip, ErrNotInPool)
	case req.Pool != "" && in.Name != req.Pool:
		return netip.Addr{}, fmt.Errorf("requested address %s is in pool %q, not %q: %w", ip, in.Name, req.Pool, ErrNotInPool)
	case !in.Allows(req.Namespace, req.Labels):
		return netip.Addr{}, fmt.Errorf("requested address %s: pool %q: %w", ip, in.Name, ErrPoolNotAllowed)
	}
	if err := a.usable(ip, req.Owner); err != nil {
		return netip.Addr{}, fmt.Errorf("requested address %s: %w", ip, err)
	}
	return ip, nil
}

// fits reports whether a held address still matches the request's pool choice.
func (a *Allocator) fits(req Request, ip netip.Addr) bool {
	for _, p := range a.pools {
		if p.Contains(ip) {
			return (req.Pool == "" || p.Name == req.Pool) && p.Allows(req.Namespace, req.Labels)
		}
	}
	return false
}

func (a *Allocator) candidates(req Request, f Family) ([]*Pool, error) {
	if req.Pool != "" {
		for _, p := range a.pools {
			if p.Name != req.Pool {
				continue
			}
			if !p.Allows(req.Namespace, req.Labels) {
				return nil, fmt.Errorf("pool %q: %w", p.Name, ErrPoolNotAllowed)
			}
			if !p.HasFamily(f) {
				return nil, fmt.Errorf("pool %q has no %s addresses: %w", p.Name, f, ErrNoPoolForFamily)
			}
			return []*Pool{p}, nil
		}
		return nil, fmt.Errorf("pool %q: %w", req.Pool, ErrUnknownPool)
	}
	var out []*Pool
	for _, p := range a.pools {
		if p.AutoAssign && p.HasFamily(f) && p.Allows(req.Namespace, req.Labels) {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("assign %s address: %w", f, ErrNoPoolForFamily)
	}
	return out, nil
}

// usable says whether o may hold ip besides its current holders.
func (a *Allocator) usable(ip netip.Addr, o Owner) error {
	for _, other := range a.ips[ip] {
		if other.Key == o.Key {
			continue
		}
		if o.SharingKey == "" || other.SharingKey != o.SharingKey {
			return fmt.Errorf("held by %s: %w", other.Key, ErrInUse)
		}
		if other.Compat != o.Compat || portsClash(other.Ports, o.Ports) {
			return fmt.Errorf("shared with %s: %w", other.Key, ErrSharingClash)
		}
	}
	return nil
}

// clashing lists the holders of ip that o cannot share it with.
func (a *Allocator) clashing(ip netip.Addr, o Owner) []*Owner {
	var out []*Owner
	for _, other := range a.ips[ip] {
		if other.Key == o.Key {
			continue
		}
		if o.SharingKey == "" || other.SharingKey != o.SharingKey || other.Compat != o.Compat || portsClash(other.Ports, o.Ports) {
			out = append(out, other)
		}
	}
	return out
}

func portsClash(a, b []Port) bool {
	for _, p := range a {
		if slices.Contains(b, p) {
			return true
		}
	}
	return false
}

// free finds a free address of family f in p, starting at a place derived
// from the Service's key, so that a Service created again gets the same
// address while it is free.
func (a *Allocator) free(p *Pool, f Family, key string) (netip.Addr, bool) {
	size := p.Size(f)
	if size == 0 {
		return netip.Addr{}, false
	}
	hash := fnv.New64a()
	_, _ = hash.Write([]byte(key))
	start := hash.Sum64() % size
	// At most len(a.ips) addresses are taken, so one more than that many
	// consecutive addresses hold a free one, if the pool has any.
	limit := size
	if used := uint64(len(a.ips)) + 1; used < limit {
		limit = used
	}
	for i := uint64(0); i < limit; i++ {
		ip := p.nth(f, (start+i)%size)
		if len(a.ips[ip]) == 0 {
			return ip, true
		}
	}
	return netip.Addr{}, false
}

func (a *Allocator) holding(o Owner) *holding {
	h := a.svcs[o.Key]
	if h == nil {
		h = &holding{owner: o}
		a.svcs[o.Key] = h
	}
	return h
}

func (a *Allocator) claim(ip netip.Addr, o *Owner) {
	m := a.ips[ip]
	if m == nil {
		m = map[string]*Owner{}
		a.ips[ip] = m
	}
	m[o.Key] = o
}

func (a *Allocator) unclaim(key string, ip netip.Addr) {
	if m := a.ips[ip]; m != nil {
		delete(m, key)
		if len(m) == 0 {
			delete(a.ips, ip)
		}
	}
}

// drop takes ip from a Service that lost it to an older one.
func (a *Allocator) drop(key string, ip netip.Addr) {
	a.unclaim(key, ip)
	h := a.svcs[key]
	if h == nil {
		return
	}
	h.observed = slices.DeleteFunc(h.observed, func(x netip.Addr) bool { return x == ip })
	h.assigned = slices.DeleteFunc(h.assigned, func(x netip.Addr) bool { return x == ip })
	if h.lost == nil {
		h.lost = map[netip.Addr]bool{}
	}
	h.lost[ip] = true
}

// PoolUsage is the size and use of one pool and family.
type PoolUsage struct {
	Pool   string
	Family Family
	Size   uint64
	Used   int
}

// Usage reports every pool's size and how many of its addresses are held.
func (a *Allocator) Usage() []PoolUsage {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []PoolUsage
	for _, p := range a.pools {
		for _, f := range []Family{IPv4, IPv6} {
			if !p.HasFamily(f) {
				continue
			}
			u := PoolUsage{Pool: p.Name, Family: f, Size: p.Size(f)}
			for ip := range a.ips {
				if FamilyOf(ip) == f && p.Contains(ip) {
					u.Used++
				}
			}
			out = append(out, u)
		}
	}
	return out
}
