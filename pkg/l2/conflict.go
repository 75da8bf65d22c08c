package l2

import (
	"bytes"
	"context"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/go-logr/logr"
)

// Timings of a conflict. A host outside the cluster that claims an address
// (it answers a probe, or announces the address while this node answers
// it) makes this node stop answering the address at once. The claim is
// confirmed by a probe ConfirmAfter later: a claim seen once may be a node
// of the cluster whose MAC this node does not know (an agent of an earlier
// release, in the middle of a takeover), which has stopped by then; a
// confirmed conflict is reported (Conflicts), and probed again every
// Reprobe until no host answers, when the address is answered again. Every
// answered address is probed every Reprobe too (audit), for the hosts that
// hold one without announcing it.
const (
	ConfirmAfter = 2 * time.Second
	Reprobe      = 30 * time.Second
)

// Conflict is an address that a host outside the cluster holds.
type Conflict struct {
	Addr netip.Addr
	// MAC is the foreign host's, nil when its message did not say.
	MAC       net.HardwareAddr
	Interface string
	Since     time.Time
}

// conflict is one address's state: suspected until the confirming probe.
type conflict struct {
	Conflict
	ifc       iface
	confirmed bool
	next      time.Time // the next probe
}

// sighting is a claim read by an answering socket, for the conflicts loop.
type sighting struct {
	claim
	ifc iface
}

// foreignLocked reports whether mac is neither one of this node's interfaces nor
// another node's of the cluster (Options.Peer): a message without a MAC is
// foreign, since the cluster's always carry one. The caller holds the lock.
func (r *Responder) foreignLocked(mac net.HardwareAddr) bool {
	if len(mac) > 0 && (slices.ContainsFunc(r.own, func(o net.HardwareAddr) bool { return bytes.Equal(o, mac) }) ||
		(r.opts.Peer != nil && r.opts.Peer(mac))) {
		return false
	}
	return true
}

func (r *Responder) foreign(mac net.HardwareAddr) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.foreignLocked(mac)
}

// sightedLocked passes a claim read on l for an address answered there to
// the conflicts loop, if a foreign host made it. The caller holds the lock
// for reading; the loop takes it to stop answering.
func (r *Responder) sightedLocked(l *link, c claim) {
	if !l.has(c.addr) || !r.foreignLocked(c.mac) {
		return
	}
	select {
	case r.sightings <- sighting{claim: c, ifc: l.ifc}:
	default: // the loop is behind: the host claims again, or a probe finds it
	}
}

// suspectLocked stops answering addr on every interface and records the
// claim, to be confirmed ConfirmAfter later. The caller holds the lock.
func (r *Responder) suspectLocked(log logr.Logger, addr netip.Addr, mac net.HardwareAddr, ifc iface, now time.Time) {
	if _, ok := r.conflicts[addr]; ok {
		return
	}
	log.Info("Another host claims an address this node would answer for: not answering it", "address", addr, "mac", macString(mac),
		"interface", ifc.Name, "confirmIn", r.confirmAfter)
	for idx := range r.answers[addr] {
		if err := r.removeLocked(addr, idx); err != nil {
			log.Error(err, "Stopping answering for an address", "address", addr, "interface", r.linkName(idx))
		}
		r.dropLinkIfEmpty(idx)
	}
	delete(r.answers, addr)
	r.conflicts[addr] = &conflict{Conflict: Conflict{Addr: addr, MAC: mac, Interface: ifc.Name, Since: now}, ifc: ifc, next: now.Add(r.confirmAfter)}
}

// sighted handles a claim an answering socket read.
func (r *Responder) sighted(log logr.Logger, s sighting) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.closed && r.answers[s.addr] != nil {
		r.suspectLocked(log, s.addr, s.mac, s.ifc, time.Now())
	}
}

// audit probes every answered address once (all at once, one window): a
// host that holds one but never announces it is silent to the watch, since
// a switch delivers its answers to the asker alone. This node's sockets do
// not answer its own probes, and no other node of the cluster answers for
// the addresses it owns.
func (r *Responder) audit(ctx context.Context, log logr.Logger) {
	r.mu.RLock()
	var answered []fresh
	for addr, idxs := range r.answers {
		for idx := range idxs {
			if l := r.links[idx]; l != nil {
				answered = append(answered, fresh{addr: addr, ifc: l.ifc})
			}
		}
	}
	r.mu.RUnlock()
	found := r.probeFresh(ctx, answered)
	for _, a := range answered {
		if mac, held := found[a.ifc.Index][a.addr]; held {
			r.sighted(log, sighting{claim: claim{addr: a.addr, mac: mac}, ifc: a.ifc})
		}
	}
}

// reprobe probes every conflict that is due: a claim confirms it (and
// reports it), none ends it (and the address is answered again if it is
// still asked for). It runs on Run's goroutine, so that its probes open
// their sockets in the namespace Run was called in.
func (r *Responder) reprobe(ctx context.Context, log logr.Logger) {
	now := time.Now()
	r.mu.RLock()
	var due []*conflict
	for _, c := range r.conflicts {
		if !now.Before(c.next) {
			due = append(due, c)
		}
	}
	r.mu.RUnlock()
	changed := false
	for _, c := range due {
		found, err := probe(ctx, c.ifc, []netip.Addr{c.Addr}, ProbeWindow, r.foreign)
		if err != nil {
			// Taken as no claim, as a failed probe before a claim is: a
			// conflict kept on a probe that cannot be sent (its interface
			// gone) would keep the address from every node for good.
			log.Error(err, "Probing an address in conflict; taken as free", "address", c.Addr, "interface", c.ifc.Name)
		}
		mac, held := found[c.Addr]
		r.mu.Lock()
		switch {
		case r.closed:
		case held:
			if !c.confirmed {
				log.Info("Address conflict confirmed: another host holds the address; no node of the cluster answers it until it is gone",
					"address", c.Addr, "mac", macString(mac), "interface", c.ifc.Name, "reprobe", r.reprobeEvery)
				c.confirmed, changed = true, true
				r.stats.conflicts.Add(1)
			}
			if len(mac) > 0 && !bytes.Equal(mac, c.MAC) {
				c.MAC, changed = mac, true
			}
			c.next = time.Now().Add(r.reprobeEvery)
		default:
			log.Info("No host claims the address any more: answering it again", "address", c.Addr, "interface", c.ifc.Name, "wasConfirmed", c.confirmed)
			delete(r.conflicts, c.Addr)
			changed = changed || c.confirmed
			for _, ifc := range r.desired[c.Addr] {
				if r.answers[c.Addr][ifc.Index] {
					continue
				}
				if err := r.addLocked(ctx, c.Addr, ifc); err != nil {
					log.Error(err, "Answering again for an address", "address", c.Addr, "interface", ifc.Name)
				}
			}
		}
		r.mu.Unlock()
	}
	if changed {
		select {
		case r.conflictsChanged <- struct{}{}:
		default:
		}
	}
}

// Conflicts are the confirmed conflicts, in address order: the addresses
// this node found held by a host outside the cluster and does not answer.
func (r *Responder) Conflicts() []Conflict {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []Conflict
	for _, c := range r.conflicts {
		if c.confirmed {
			out = append(out, c.Conflict)
		}
	}
	slices.SortFunc(out, func(a, b Conflict) int { return a.Addr.Compare(b.Addr) })
	return out
}

// ConflictsChanged is told, coalesced, when Conflicts changes.
func (r *Responder) ConflictsChanged() <-chan struct{} { return r.conflictsChanged }

func macString(mac net.HardwareAddr) string {
	if len(mac) == 0 {
		return "unknown"
	}
	return mac.String()
}
