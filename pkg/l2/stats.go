package l2

import "sync/atomic"

// Stats counts the packets a Responder has sent, per address family, for
// metrics and status.
type Stats struct {
	IPv4 FamilyStats
	IPv6 FamilyStats
	// Conflicts counts the confirmed address conflicts.
	Conflicts uint64
}

// FamilyStats counts one family's packets: replies are answers to ARP
// requests or Neighbor Solicitations; gratuitous are gratuitous ARPs or
// unsolicited Neighbor Advertisements.
type FamilyStats struct {
	Replies    uint64
	Gratuitous uint64
}

type stats struct {
	arpReplies, arpGratuitous atomic.Uint64
	ndpReplies, ndpGratuitous atomic.Uint64
	conflicts                 atomic.Uint64
}

func (s *stats) snapshot() Stats {
	return Stats{
		IPv4:      FamilyStats{Replies: s.arpReplies.Load(), Gratuitous: s.arpGratuitous.Load()},
		IPv6:      FamilyStats{Replies: s.ndpReplies.Load(), Gratuitous: s.ndpGratuitous.Load()},
		Conflicts: s.conflicts.Load(),
	}
}
