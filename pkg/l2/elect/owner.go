// Package elect decides which node answers for each L2 address: the rule
// every node agent applies to its own view, and the CCM to its own, to show
// users who answers.
package elect

import (
	"net/netip"
	"slices"

	"github.com/metal-ccm/metal-ccm/pkg/l2/member"
	"github.com/metal-ccm/metal-ccm/pkg/rendezvous"
)

// View is what one decision of who answers reads: every agent decides
// from its own view, and views that agree give the same answer everywhere.
type View struct {
	// Candidates are each L2 address's eligible nodes, as next-hop
	// addresses (the announcer's decision for the address).
	Candidates map[netip.Prefix][]netip.Addr
	// Alive are the agents the membership shows alive.
	Alive []member.Member
	// Expected are the nodes that should run an L2 agent (l2.nodeSelector)
	// and are Ready, as the API server shows them, each with its
	// InternalIPs: a member counts only as the agent of one of them, from
	// that node's addresses (Bound).
	Expected map[string][]netip.Addr
	// Self are this node's addresses.
	Self []netip.Addr
	// Witness: this agent holds the vote of the two-node witness
	// (pkg/l2/witness). An observer (Self nil) reads the members' claims
	// instead.
	Witness bool
}

// Choice is a decision: whether this agent has a majority, each
// address's owner (the address of the node that answers; invalid when no
// candidate is alive), and the addresses this node answers for (none
// without a majority).
type Choice struct {
	Quorum bool
	Owners map[netip.Prefix]netip.Addr
	Mine   []netip.Addr
	// Members are the live members that count (Bound); Ignored is how many
	// live members do not.
	Members []member.Member
	Ignored int
	// Conflicts are the addresses bound members report in use by a host
	// outside the cluster: none of them has an owner.
	Conflicts map[netip.Addr]Conflict
}

// Choose decides who answers for each address: among its candidates whose
// agent is alive and whose node can carry it (fit), the first by rendezvous hashing of the address (the same
// rule that picks the BGP next hops of an address when there are more nodes
// than paths), so that addresses spread over the nodes and a node that comes
// or goes moves only the addresses it gains or loses. This node answers for
// the addresses it owns only while it sees a strict majority of the
// expected agents alive: an agent cut off from the others sees a minority
// and falls silent, so two nodes answer for one address only until the
// membership has told the majority side and the cut-off agent, both within
// the detection time. An address that a bound member reports in conflict
// with a host outside the cluster has no owner. With l2.failback Sticky
// the agents tell the addresses they answer for (member.Fitness.Holds),
// and a fit candidate that holds an address keeps it (held).
func Choose(v View) Choice {
	bound := Bound(v.Alive, v.Expected)
	names := make([]string, len(bound))
	expected := make([]string, 0, len(v.Expected))
	for name := range v.Expected {
		expected = append(expected, name)
	}
	live := map[netip.Addr]member.Fitness{}
	for i, m := range bound {
		names[i] = m.Name
		for _, a := range m.Addresses {
			live[a.Unmap()] = m.Fitness
		}
	}
	c := Choice{Quorum: member.HasQuorum(names, expected) || witnessMajority(v, bound), Owners: make(map[netip.Prefix]netip.Addr, len(v.Candidates)),
		Members: bound, Ignored: len(v.Alive) - len(bound), Conflicts: conflicts(bound)}
	nodeAddrs := map[netip.Addr]bool{}
	for _, addrs := range v.Expected {
		for _, a := range addrs {
			nodeAddrs[a.Unmap()] = true
		}
	}
	for p, hops := range v.Candidates {
		if nodeAddrs[p.Addr().Unmap()] {
			// A node's own address: its kernel answers for it, and an
			// agent answering too would make two hosts answer.
			continue
		}
		if _, ok := c.Conflicts[p.Addr().Unmap()]; ok {
			// Another host uses it: a node that answered too would split
			// the clients between them.
			continue
		}
		owner, ok := ownerOf(p, hops, live)
		if !ok {
			continue
		}
		c.Owners[p] = owner
		if c.Quorum && slices.Contains(v.Self, owner) {
			c.Mine = append(c.Mine, p.Addr())
		}
	}
	slices.SortFunc(c.Mine, netip.Addr.Compare)
	return c
}

// witnessMajority: two agents are expected, one of them is alive, and it
// holds the witness's vote, which makes two of three. An agent trusts only
// its own Lease for its vote (its own gossip may lag behind a vote that
// lapsed); an observer, which shows who answers and answers for nothing,
// trusts the claim in the live member's metadata.
func witnessMajority(v View, bound []member.Member) bool {
	if len(v.Expected) != 2 || len(bound) != 1 {
		return false
	}
	if v.Self == nil {
		return bound[0].Fitness.Witness
	}
	return v.Witness && slices.ContainsFunc(bound[0].Addresses, func(a netip.Addr) bool { return slices.Contains(v.Self, a.Unmap()) })
}

// ownerOf is the owner of p among its candidates hops: the first by
// rendezvous hashing among the fit ones, and among those that hold it when
// any does. It computes the choice in one pass, without a list per address
// (an observer at 5,000 nodes runs it for each of 1,000 addresses over 255
// candidates each).
//
// Fit: the candidates whose agent is alive and says its node serves the
// address; when none does, every live one (fail open, as the replicas'
// health checks: an address is better answered by a node that may not
// forward than by none, and a cluster whose every check fails, or whose
// agents have just started, still answers).
//
// Held: with l2.failback Sticky an address stays with the node that took it
// over while that node can carry it, rather than going back to the first by
// hashing when that one returns (which would cut the connections through
// the address). Two holders for a moment (a takeover not yet told by the
// one that lost it) are settled by hashing among them. The rule reads only
// what the members say, so agents configured either way during a rollout
// still agree.
func ownerOf(p netip.Prefix, hops []netip.Addr, live map[netip.Addr]member.Fitness) (netip.Addr, bool) {
	addr := p.Addr()
	up, upHeld, serving, servingHeld := rendezvous.NewBest(p), rendezvous.NewBest(p), rendezvous.NewBest(p), rendezvous.NewBest(p)
	for _, h := range hops {
		h = h.Unmap()
		f, ok := live[h]
		if !ok {
			continue
		}
		s, held := up.Score(h), f.Held(addr)
		up.Take(s)
		if held {
			upHeld.Take(s)
		}
		if f.Serves(addr) {
			serving.Take(s)
			if held {
				servingHeld.Take(s)
			}
		}
	}
	if _, any := serving.Owner(); any {
		up, upHeld = serving, servingHeld
	}
	if o, ok := upHeld.Owner(); ok {
		return o, true
	}
	return up.Owner()
}

// Bound are the members that count: each named as an expected node,
// reached at one of that node's addresses and claiming only that node's
// addresses. Any other (an agent on a node that l2.nodeSelector leaves out,
// a process that reached the membership port and claims a node's name from
// another address) neither counts towards the majority nor answers.
func Bound(alive []member.Member, expected map[string][]netip.Addr) []member.Member {
	out := make([]member.Member, 0, len(alive))
	for _, m := range alive {
		addrs, ok := expected[m.Name]
		if !ok || len(m.Addresses) == 0 || !slices.Contains(addrs, m.From) {
			continue
		}
		if slices.ContainsFunc(m.Addresses, func(a netip.Addr) bool { return !slices.Contains(addrs, a.Unmap()) }) {
			continue
		}
		out = append(out, m)
	}
	return out
}
