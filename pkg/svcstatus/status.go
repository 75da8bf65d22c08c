// Package svcstatus shows on each LoadBalancer Service what the provider
// knows of it: two conditions in status.conditions (its addresses are
// allocated, or why not; they are announced, or why not) and a one-line
// summary in an annotation (who carries each address, to which routers),
// written by the leader, coalesced and rate-bounded (Writer), with an Event
// whenever the summary changes.
package svcstatus

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types, in the Service's status.conditions.
const (
	TypeAllocated = "metal-ccm.io/AddressAllocated"
	TypeAnnounced = "metal-ccm.io/Announced"
)

// Reasons of the conditions. A refused allocation has the refusal's Event
// reason (PoolExhausted, IPInUse, ...).
const (
	ReasonAllocated = "Allocated"
	// ReasonPending: the Service was not synced yet.
	ReasonPending = "Pending"

	ReasonAnnounced = "Announced"
	// ReasonNoAddress: nothing to announce (see TypeAllocated).
	ReasonNoAddress = "NoAddress"
	// ReasonNotSentToAnyPeer: no BGP peer gets the address's pool (no
	// peers, or the pool's bgpAdvertisements select none), and no L2.
	ReasonNotSentToAnyPeer = "NotSentToAnyPeer"
	// ReasonOutsidePools: an address of the Service is in no configured
	// pool, so no protocol announces it (whoever wrote it into the status).
	ReasonOutsidePools = "OutsidePools"
	// ReasonNoEligibleNode: no node may carry the address (none Ready and
	// initialized, none with a ready endpoint of a Local Service, all
	// excluded).
	ReasonNoEligibleNode = "NoEligibleNode"
	// ReasonNoSessionUp: nodes carry it, but no session with a peer that
	// gets it is established.
	ReasonNoSessionUp = "NoSessionUp"
	// ReasonL2AddressConflict: a host outside the cluster holds an L2
	// address (a node agent's probe found it), so no node answers it; the
	// L2 leader records a Warning Event of the same reason.
	ReasonL2AddressConflict = "L2AddressConflict"
)

// Reason for the event written when the summary changes.
const ReasonAnnouncementChanged = "AnnouncementChanged"

// Protocol is how an address is announced, as the summary shows it.
type Protocol string

const (
	// BGP from the CCM replicas, the nodes as next hops.
	BGP Protocol = "BGP"
	// BGPFromNodes: each node's agent announces its own node.
	BGPFromNodes Protocol = "BGP from nodes"
	// L2: one node answers ARP/NDP.
	L2 Protocol = "L2"
)

// Announcement is what is known of one address under one protocol.
type Announcement struct {
	Addr     netip.Addr
	Protocol Protocol
	// Nodes carry it: the next hops' nodes (BGP), the answering node (L2).
	Nodes []string
	// Peers get it by policy (BGP); PeersUp of them have an established
	// session. Unknown (nil, nil) with BGPFromNodes: the agents' sessions.
	Peers, PeersUp []string
	// Conflict (L2) names the host outside the cluster that holds the
	// address, by its MAC ("unknown" when not known); empty: none does.
	Conflict string
}

// Reason is why the address is not announced, or ReasonAnnounced.
func (a *Announcement) Reason() string {
	switch {
	case a.Conflict != "":
		return ReasonL2AddressConflict
	case a.Protocol == BGP && len(a.Peers) == 0:
		return ReasonNotSentToAnyPeer
	case len(a.Nodes) == 0:
		return ReasonNoEligibleNode
	case a.Protocol == BGP && len(a.PeersUp) == 0:
		return ReasonNoSessionUp
	}
	return ReasonAnnounced
}

// maxNames is the most names of nodes or peers a summary lists; the rest
// are counted.
const maxNames = 5

// String is the announcement in a few words: "198.18.100.0 BGP via 3 nodes
// (node-1,node-2,node-3) to 1/1 peers up (router)".
func (a *Announcement) String() string {
	var b strings.Builder
	if a.Protocol == BGPFromNodes {
		fmt.Fprintf(&b, "%s BGP from %s", a.Addr, count(a.Nodes, "node"))
		return b.String()
	}
	fmt.Fprintf(&b, "%s %s", a.Addr, a.Protocol)
	switch a.Protocol {
	case L2:
		if a.Conflict != "" {
			fmt.Fprintf(&b, " answered by no node: held by a host outside the cluster (MAC %s)", a.Conflict)
		} else if len(a.Nodes) == 0 {
			b.WriteString(" answered by no node")
		} else {
			fmt.Fprintf(&b, " answered by %s", names(a.Nodes))
		}
	default:
		if len(a.Peers) == 0 {
			b.WriteString(" to no peer (no BGP peer gets its pool)")
			break
		}
		fmt.Fprintf(&b, " via %s to %d/%d peers up (%s)", count(a.Nodes, "node"), len(a.PeersUp), len(a.Peers), names(a.Peers))
	}
	return b.String()
}

// count is "3 nodes (a,b,c)", "1 node (a)" or "0 nodes".
func count(list []string, noun string) string {
	switch len(list) {
	case 0:
		return "0 " + noun + "s"
	case 1:
		return "1 " + noun + " (" + list[0] + ")"
	}
	return fmt.Sprintf("%d %ss (%s)", len(list), noun, names(list))
}

// names lists up to maxNames names, then "+N".
func names(list []string) string {
	if len(list) <= maxNames {
		return strings.Join(list, ",")
	}
	return strings.Join(list[:maxNames], ",") + fmt.Sprintf(",+%d", len(list)-maxNames)
}

// State is what the leader knows of one Service.
type State struct {
	// Refusal is the reason (an Event reason) and message of the last
	// refused allocation; empty when none was refused since the last sync.
	RefusalReason, RefusalMessage string
	// Addresses are the addresses in the Service's status, with their
	// pools.
	Addresses []netip.Addr
	Pools     []string
	// Announcements are what is known of each address under each of its
	// protocols, in address order. Known is false while the announcers have
	// not synced yet: the Announced condition is then left as it is.
	Announcements []Announcement
	Known         bool
	// NoNodeWhy says why no node is eligible (nodes.Why), for the
	// Announced condition's message when its reason is
	// ReasonNoEligibleNode; empty: not known.
	NoNodeWhy string
}

// Summary is the annotation's value: each announcement, separated by "; ".
func (s *State) Summary() string {
	parts := make([]string, 0, len(s.Announcements))
	for i := range s.Announcements {
		parts = append(parts, s.Announcements[i].String())
	}
	return strings.Join(parts, "; ")
}

// Conditions are the two conditions (type, status, reason, message; no
// times: Apply sets them).
func (s *State) Conditions() []metav1.Condition {
	alloc := metav1.Condition{Type: TypeAllocated, Status: metav1.ConditionTrue, Reason: ReasonAllocated}
	switch {
	case s.RefusalReason != "":
		// The last sync was refused; addresses the Service still shows
		// are from before.
		alloc.Status, alloc.Reason, alloc.Message = metav1.ConditionFalse, s.RefusalReason, s.RefusalMessage
	case len(s.Addresses) > 0:
		parts := make([]string, len(s.Addresses))
		for i, a := range s.Addresses {
			parts[i] = a.String()
			if i < len(s.Pools) && s.Pools[i] != "" {
				parts[i] += " from pool " + s.Pools[i]
			}
		}
		alloc.Message = strings.Join(parts, ", ")
	default:
		alloc.Status, alloc.Reason, alloc.Message = metav1.ConditionUnknown, ReasonPending, "not synced yet"
	}
	out := []metav1.Condition{alloc}
	if !s.Known {
		return out
	}
	ann := metav1.Condition{Type: TypeAnnounced, Status: metav1.ConditionTrue, Reason: ReasonAnnounced, Message: s.Summary()}
	if len(s.Addresses) == 0 {
		ann.Status, ann.Reason, ann.Message = metav1.ConditionFalse, ReasonNoAddress, "no address to announce"
		return append(out, ann)
	}
	for i, a := range s.Addresses {
		if i < len(s.Pools) && s.Pools[i] == "" {
			ann.Status, ann.Reason, ann.Message = metav1.ConditionFalse, ReasonOutsidePools,
				fmt.Sprintf("%s is in no configured pool: not announced", a)
			if len(s.Announcements) > 0 {
				ann.Message += "; " + s.Summary()
			}
			return append(out, ann)
		}
	}
	for i := range s.Announcements {
		if r := s.Announcements[i].Reason(); r != ReasonAnnounced {
			ann.Status, ann.Reason = metav1.ConditionFalse, r
			if r == ReasonNoEligibleNode && s.NoNodeWhy != "" {
				ann.Message = s.NoNodeWhy + "; " + ann.Message
			}
			break
		}
	}
	if len(s.Announcements) == 0 {
		ann.Status, ann.Reason, ann.Message = metav1.ConditionFalse, ReasonNotSentToAnyPeer, "no protocol announces the addresses"
	}
	return append(out, ann)
}

// maxMessage bounds a condition's message (the API allows 32768 bytes).
const maxMessage = 1024

// Merge sets want in conds, keeping the other types and the transition time
// of a condition whose status does not change, and reports whether anything
// changed. now is the time of a transition.
func Merge(conds []metav1.Condition, want []metav1.Condition, now metav1.Time) ([]metav1.Condition, bool) {
	out := slices.Clone(conds)
	changed := false
	for _, w := range want {
		if len(w.Message) > maxMessage {
			w.Message = w.Message[:maxMessage-3] + "..."
		}
		i := slices.IndexFunc(out, func(c metav1.Condition) bool { return c.Type == w.Type })
		if i < 0 {
			w.LastTransitionTime = now
			out = append(out, w)
			changed = true
			continue
		}
		old := out[i]
		if old.Status == w.Status && old.Reason == w.Reason && old.Message == w.Message {
			continue
		}
		w.LastTransitionTime = old.LastTransitionTime
		if old.Status != w.Status {
			w.LastTransitionTime = now
		}
		out[i] = w
		changed = true
	}
	return out, changed
}
