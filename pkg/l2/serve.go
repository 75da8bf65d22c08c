package l2

import (
	"net/netip"
	"time"

	"github.com/go-logr/logr"
)

// readRetry is the pause after a failed read that was not a close (the
// interface went down, say), so that a lasting fault does not spin.
const readRetry = time.Second

// serveARP answers the ARP requests that c receives until c is closed, and
// passes on the claims of foreign hosts for the addresses it answers.
func (r *Responder) serveARP(log logr.Logger, l *link, c *arpConn) {
	buf := make([]byte, 1514)
	for {
		frame, err := c.read(buf)
		if err != nil {
			if c.closed.Load() || !r.pause(log, err) {
				return
			}
			continue
		}
		r.mu.RLock()
		if cl, ok := arpClaim(frame); ok {
			r.sightedLocked(l, cl)
		}
		reply, dst, ok := arpReply(l.ifc.HardwareAddr, frame, l.has)
		if ok {
			if err := c.write(reply, dst); err != nil {
				log.V(2).Info("ARP reply not sent", "address", reply.SenderIP, "err", err)
			} else {
				r.stats.arpReplies.Add(1)
				log.V(5).Info("Answered ARP", "address", reply.SenderIP, "to", reply.TargetIP)
			}
		}
		r.mu.RUnlock()
	}
}

// serveNDP answers the Neighbor Solicitations that c receives until c is
// closed, and passes on the advertisements of foreign hosts for the
// addresses it answers.
func (r *Responder) serveNDP(log logr.Logger, l *link, c *ndpConn) {
	buf := make([]byte, max(l.ifc.MTU, 1500))
	for {
		m, cm, src, err := c.read(buf)
		if err != nil {
			if c.closed.Load() || !r.pause(log, err) {
				return
			}
			continue
		}
		r.mu.RLock()
		if cl, ok := ndpClaim(l.ifc.Index, m, cm); ok {
			r.sightedLocked(l, cl)
		}
		na, dst, ok := ndpReply(l.ifc.HardwareAddr, l.ifc.Index, m, cm, src, l.has)
		if ok {
			if err := c.write(na, dst); err != nil {
				log.V(2).Info("Neighbor Advertisement not sent", "address", na.TargetAddress, "err", err)
			} else {
				r.stats.ndpReplies.Add(1)
				log.V(5).Info("Answered Neighbor Solicitation", "address", na.TargetAddress, "to", dst)
			}
		}
		r.mu.RUnlock()
	}
}

// pause logs a read error and waits readRetry; false when the Responder
// ends meanwhile.
func (r *Responder) pause(log logr.Logger, err error) bool {
	log.Error(err, "Reading neighbor requests")
	select {
	case <-r.done:
		return false
	case <-time.After(readRetry):
		return true
	}
}

// announceLocked sends one gratuitous packet for addr on l. The caller
// holds the lock (for reading at least), so the socket stays open.
func (r *Responder) announceLocked(log logr.Logger, l *link, addr netip.Addr) {
	if err := l.announce(addr); err != nil {
		log.Error(err, "Announcing an address", "address", addr)
		return
	}
	if addr.Is4() {
		r.stats.arpGratuitous.Add(1)
	} else {
		r.stats.ndpGratuitous.Add(1)
	}
}

// repeat sends the gratuitous packets after the first, while addr is still
// answered on the interface.
func (r *Responder) repeat(log logr.Logger, idx int, addr netip.Addr) {
	t := time.NewTicker(gratuitousInterval)
	defer t.Stop()
	for range gratuitousCount - 1 {
		select {
		case <-r.done:
			return
		case <-t.C:
		}
		r.mu.RLock()
		l := r.links[idx]
		if l == nil || !l.has(addr) {
			r.mu.RUnlock()
			return
		}
		r.announceLocked(log, l, addr)
		r.mu.RUnlock()
	}
}
