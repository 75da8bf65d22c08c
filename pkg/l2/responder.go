package l2

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

// ErrClosed is returned by SetAddresses once Run has ended.
var ErrClosed = errors.New("l2 responder closed")

// Gratuitous packets are repeated, as other speakers do, since one can be
// lost and then a cache keeps the old node's MAC until its entry ages out:
// gratuitousCount packets gratuitousInterval apart, over about 2 s.
const (
	gratuitousCount    = 3
	gratuitousInterval = time.Second
)

// Options configure a Responder.
type Options struct {
	// Interfaces names the interfaces to answer on, for every address.
	// Empty: for each address, the up, non-loopback Ethernet interfaces
	// that hold an address whose prefix contains it.
	Interfaces []string
	// Refresh, when positive, is how often every answered address is
	// announced again (one packet each), so that no client keeps another
	// node's MAC for longer than that whatever it missed: announcements
	// lost, or ignored within a Linux client's locktime, or a partition so
	// short that this node never saw it while the others moved its
	// addresses and back (then nothing tells this node to announce, and a
	// client whose traffic the other node still forwards never asks again).
	Refresh time.Duration
	// Peer reports whether a MAC is another node's of the cluster (the
	// agents gossip theirs): its claims for an address are the cluster's
	// own double answer during a takeover, which the membership settles,
	// not a conflict. Nil: every MAC but this node's is foreign.
	Peer func(net.HardwareAddr) bool
}

// DefaultRefresh is the node agent's Options.Refresh: a packet per address
// every 5 s (100 per second for 500 addresses) bounds a stale client to 5 s.
const DefaultRefresh = 5 * time.Second

// Responder is the node's L2 speaker: it answers ARP requests and Neighbor
// Solicitations for the addresses given to SetAddresses, with the MAC of the
// interface they arrive on.
//
// Its sockets are opened by SetAddresses in the network namespace of the
// calling thread, and interfaces are looked up there too; they stay in that
// namespace whichever goroutine uses them later.
type Responder struct {
	opts Options
	// list reads the interfaces; a field so that a test can give its own.
	list func() ([]iface, error)

	// setMu orders SetAddresses, which probes without holding mu.
	setMu   sync.Mutex
	mu      sync.RWMutex
	links   map[int]*link               // by interface index
	answers map[netip.Addr]map[int]bool // address -> interface indexes
	closed  bool
	running bool
	// desired are the interfaces of each address SetAddresses asked for,
	// answered or not (in conflict).
	desired map[netip.Addr][]iface
	// own are the MACs of this node's interfaces, as last listed.
	own       []net.HardwareAddr
	conflicts map[netip.Addr]*conflict
	sightings chan sighting
	// confirmAfter and reprobeEvery are ConfirmAfter and Reprobe; fields
	// so that a test need not wait as long.
	confirmAfter, reprobeEvery time.Duration
	// conflictsChanged is told when the confirmed conflicts change.
	conflictsChanged chan struct{}

	done  chan struct{} // closed when Run ends: stops the repeats
	wg    sync.WaitGroup
	stats stats
}

// New returns a Responder that answers for no address yet.
func New(opts Options) *Responder {
	return &Responder{
		opts:             Options{Interfaces: slices.Clone(opts.Interfaces), Refresh: opts.Refresh, Peer: opts.Peer},
		list:             listInterfaces,
		links:            map[int]*link{},
		answers:          map[netip.Addr]map[int]bool{},
		desired:          map[netip.Addr][]iface{},
		conflicts:        map[netip.Addr]*conflict{},
		sightings:        make(chan sighting, 64),
		conflictsChanged: make(chan struct{}, 1),
		confirmAfter:     ConfirmAfter,
		reprobeEvery:     Reprobe,
		done:             make(chan struct{}),
	}
}

// Announced is one address answered for, and where.
type Announced struct {
	Addr       netip.Addr
	Interfaces []string
}

// Addresses returns the addresses answered for now, in order, with the
// interfaces they are answered on. An address that SetAddresses failed is
// not among them.
func (r *Responder) Addresses() []Announced {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Announced, 0, len(r.answers))
	for addr, idxs := range r.answers {
		a := Announced{Addr: addr}
		for idx := range idxs {
			a.Interfaces = append(a.Interfaces, r.links[idx].ifc.Name)
		}
		slices.Sort(a.Interfaces)
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b Announced) int { return a.Addr.Compare(b.Addr) })
	return out
}

// SetAddresses makes the set of addresses answered for exactly addrs,
// but for those in conflict with a host outside the cluster (conflict.go).
// Addresses no longer in it stop being answered before it returns. Each new
// one is first probed on each of its interfaces (an ARP Probe, a Duplicate
// Address Detection solicitation; all at once, ProbeWindow in all): one
// that a foreign host claims is not answered. The others are announced
// (gratuitous ARP, unsolicited Neighbor Advertisement) on each of their
// interfaces before it returns, and again twice over the next 2 s.
//
// An address that cannot be answered (no interface for it, wrapping
// ErrNoInterface; a missing named interface, wrapping ErrInterfaceNotFound;
// a socket that would not open; not a unicast address) makes the returned
// error, which names it, but the others are answered all the same. An
// address that was answered and still is keeps being answered even if the
// interfaces cannot be read this time.
func (r *Responder) SetAddresses(ctx context.Context, addrs []netip.Addr) error {
	want, errs := normalize(addrs)
	r.setMu.Lock()
	defer r.setMu.Unlock()

	fresh, errs, err := r.plan(ctx, want, errs)
	if err != nil {
		return err
	}
	// The probes run without the lock: the sockets keep answering the
	// addresses kept meanwhile.
	found := r.probeFresh(ctx, fresh)

	log := klog.FromContext(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	now := time.Now()
	for _, f := range fresh {
		if r.answers[f.addr][f.ifc.Index] || r.conflicts[f.addr] != nil {
			continue
		}
		if mac, held := found[f.ifc.Index][f.addr]; held {
			r.suspectLocked(log, f.addr, mac, f.ifc, now)
			continue
		}
		if err := r.addLocked(ctx, f.addr, f.ifc); err != nil {
			errs = append(errs, fmt.Errorf("l2: %s on %s: %w", f.addr, f.ifc.Name, err))
			continue
		}
		log.V(2).Info("Answering", "address", f.addr, "interface", f.ifc.Name)
	}
	return errors.Join(errs...)
}

// fresh is an address to answer on an interface where it is not answered
// yet: probed first.
type fresh struct {
	addr netip.Addr
	ifc  iface
}

// plan reads the interfaces, stops answering what is no longer wanted and
// returns what is to be answered anew. Addresses in conflict are left out.
func (r *Responder) plan(ctx context.Context, want []netip.Addr, errs []error) ([]fresh, []error, error) {
	log := klog.FromContext(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, nil, ErrClosed
	}

	ifaces, listErr := r.list()
	desired := map[netip.Addr][]iface{}
	if listErr != nil {
		errs = append(errs, fmt.Errorf("l2: addresses kept as they were: %w", listErr))
	} else {
		r.own = r.own[:0]
		for _, ifc := range ifaces {
			if ifc.ethernet() {
				r.own = append(r.own, ifc.HardwareAddr)
			}
		}
	}
	for _, addr := range want {
		if listErr != nil {
			continue
		}
		sel, err := selectInterfaces(addr, ifaces, r.opts.Interfaces)
		if err != nil {
			errs = append(errs, fmt.Errorf("l2: %w", err))
		}
		desired[addr] = sel
	}
	if listErr == nil {
		r.desired = desired
	}

	// Removals first, so that an address stops being answered whatever
	// becomes of the additions.
	for addr, idxs := range r.answers {
		if listErr != nil && slices.Contains(want, addr) {
			continue
		}
		for idx := range idxs {
			if slices.ContainsFunc(desired[addr], func(ifc iface) bool { return ifc.Index == idx }) {
				continue
			}
			if err := r.removeLocked(addr, idx); err != nil {
				log.Error(err, "Stopping answering for an address", "address", addr, "interface", r.linkName(idx))
			}
			log.V(2).Info("Stopped answering", "address", addr, "interface", r.linkName(idx))
			delete(idxs, idx)
			r.dropLinkIfEmpty(idx)
		}
		if len(idxs) == 0 {
			delete(r.answers, addr)
		}
	}

	var out []fresh
	for _, addr := range want {
		if r.conflicts[addr] != nil {
			continue // another host holds it: its re-probes answer it again
		}
		for _, ifc := range desired[addr] {
			if !r.answers[addr][ifc.Index] {
				out = append(out, fresh{addr: addr, ifc: ifc})
			}
		}
	}
	return out, errs, nil
}

// probeFresh probes the fresh addresses, every interface at once, and
// returns the claims found on each interface (by index). A probe that
// fails is logged and claims nothing: no probe is no reason to leave an
// address unanswered.
func (r *Responder) probeFresh(ctx context.Context, fresh []fresh) map[int]map[netip.Addr]net.HardwareAddr {
	byIfc := map[int][]netip.Addr{}
	ifcs := map[int]iface{}
	for _, f := range fresh {
		byIfc[f.ifc.Index] = append(byIfc[f.ifc.Index], f.addr)
		ifcs[f.ifc.Index] = f.ifc
	}
	out := make(map[int]map[netip.Addr]net.HardwareAddr, len(byIfc))
	if len(byIfc) == 0 {
		return out
	}
	// One probe per interface, each on its own goroutine once its sockets
	// are open (probe opens them on the calling thread, in its namespace).
	waits := make(map[int]func() (map[netip.Addr]net.HardwareAddr, error), len(byIfc))
	for idx, addrs := range byIfc {
		waits[idx] = startProbe(ctx, ifcs[idx], addrs, ProbeWindow, r.foreign)
	}
	for idx, wait := range waits {
		found, err := wait()
		if err != nil {
			klog.FromContext(ctx).Error(err, "Probing addresses; taken as free", "interface", ifcs[idx].Name)
		}
		out[idx] = found
	}
	return out
}

// Announce sends the gratuitous packets again (the first now, the repeats
// after) for those of addrs that are answered, on every interface they are
// answered on; others are ignored. A node that kept answering for an
// address through a partition calls it when the partition heals: clients
// that meanwhile learned another node's MAC keep it as long as that node
// forwards their traffic, since traffic confirms a neighbor entry, and only
// an announcement corrects them.
func (r *Responder) Announce(ctx context.Context, addrs []netip.Addr) {
	want, _ := normalize(addrs)
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return
	}
	for _, addr := range want {
		for idx := range r.answers[addr] {
			l := r.links[idx]
			if l == nil {
				continue
			}
			log := klog.FromContext(ctx).WithValues("interface", l.ifc.Name)
			r.announceLocked(log, l, addr)
			r.wg.Go(func() { r.repeat(log, idx, addr) })
		}
	}
}

// refresh announces every answered address once on each of its
// interfaces.
func (r *Responder) refresh(log logr.Logger) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for addr, idxs := range r.answers {
		for idx := range idxs {
			if l := r.links[idx]; l != nil {
				r.announceLocked(log.WithValues("interface", l.ifc.Name), l, addr)
			}
		}
	}
}

// normalize returns addrs unmapped, deduplicated and sorted, and an error
// for each one that no host can ask for on a segment.
func normalize(addrs []netip.Addr) ([]netip.Addr, []error) {
	var out []netip.Addr
	var errs []error
	for _, a := range addrs {
		a = a.Unmap().WithZone("")
		if !a.IsValid() || a.IsUnspecified() || a.IsMulticast() || a.IsLoopback() || a.IsLinkLocalUnicast() {
			errs = append(errs, fmt.Errorf("l2: %v: not an address to answer for", a))
			continue
		}
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b netip.Addr) int { return a.Compare(b) })
	return slices.Compact(out), errs
}

// addLocked answers for addr on ifc and announces it there at once.
func (r *Responder) addLocked(ctx context.Context, addr netip.Addr, ifc iface) error {
	l := r.links[ifc.Index]
	if l == nil {
		l = newLink(ifc)
		r.links[ifc.Index] = l
	}
	openedARP, openedNDP, err := l.add(addr)
	if err != nil {
		r.dropLinkIfEmpty(ifc.Index)
		return err
	}
	log := klog.FromContext(ctx).WithValues("interface", ifc.Name)
	if openedARP != nil {
		r.wg.Go(func() { r.serveARP(log, l, openedARP) })
	}
	if openedNDP != nil {
		r.wg.Go(func() { r.serveNDP(log, l, openedNDP) })
	}
	if r.answers[addr] == nil {
		r.answers[addr] = map[int]bool{}
	}
	r.answers[addr][ifc.Index] = true

	// The first announcement goes out now, so that it has left when
	// SetAddresses returns; a failed send is logged, not returned: the
	// address is answered, and the repeats may get through.
	r.announceLocked(log, l, addr)
	r.wg.Go(func() { r.repeat(log, ifc.Index, addr) })
	return nil
}

func (r *Responder) removeLocked(addr netip.Addr, idx int) error {
	l := r.links[idx]
	if l == nil {
		return nil
	}
	return l.remove(addr)
}

func (r *Responder) dropLinkIfEmpty(idx int) {
	if l := r.links[idx]; l != nil && l.empty() {
		delete(r.links, idx)
	}
}

func (r *Responder) linkName(idx int) string {
	if l := r.links[idx]; l != nil {
		return l.ifc.Name
	}
	return fmt.Sprint(idx)
}

// Run waits until ctx ends, then stops answering and closes every socket.
// Meanwhile it handles the conflicts: the claims the sockets read, and the
// probes of the addresses in conflict, which open their sockets in the
// network namespace of the thread Run is called on.
// SetAddresses may be called before Run; after Run has returned it fails
// with ErrClosed.
func (r *Responder) Run(ctx context.Context) error {
	r.mu.Lock()
	if r.running || r.closed {
		r.mu.Unlock()
		return errors.New("l2: Run called twice")
	}
	r.running = true
	r.mu.Unlock()

	var refresh <-chan time.Time
	if r.opts.Refresh > 0 {
		t := time.NewTicker(r.opts.Refresh)
		defer t.Stop()
		refresh = t.C
	}
	// The conflicts are looked at every second: a probe is due at most
	// that late.
	conflicts := time.NewTicker(min(time.Second, r.confirmAfter))
	defer conflicts.Stop()
	// Every answered address is probed every reprobeEvery too, for the
	// foreign hosts that hold one silently.
	audit := time.NewTicker(r.reprobeEvery)
	defer audit.Stop()
	log := klog.FromContext(ctx)
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-refresh:
			r.refresh(log)
		case s := <-r.sightings:
			r.sighted(log, s)
		case <-conflicts.C:
			r.reprobe(ctx, log)
		case <-audit.C:
			r.audit(ctx, log)
		}
	}
	klog.FromContext(ctx).V(2).Info("Stopping the L2 responder")

	r.mu.Lock()
	r.closed = true
	close(r.done)
	var errs []error
	for idx, l := range r.links {
		errs = append(errs, l.close())
		delete(r.links, idx)
	}
	clear(r.answers)
	r.mu.Unlock()
	r.wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("l2: %w", err)
	}
	return nil
}

// Stats returns the counts of packets sent since New.
func (r *Responder) Stats() Stats { return r.stats.snapshot() }
