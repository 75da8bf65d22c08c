package member

import (
	"time"

	"github.com/hashicorp/memberlist"
)

// Timing is how fast the membership probes its members and declares them
// dead. A zero field takes DefaultTiming's.
//
// A member that dies is noticed when some other member probes it and gets
// no answer (direct, indirect through others, nor over TCP) within the
// probe interval; that member suspects it and gossips the suspicion; the
// suspect is declared dead when the suspicion timeout runs out without a
// refutation from it. So detection ≈ (up to) one probe interval + the
// suspicion timeout, where memberlist's suspicion timeout is
//
//	SuspicionMult × max(1, log10(n)) × ProbeInterval
//
// for n members, when enough other members confirm the suspicion on their
// own (Lifeguard; SuspicionMult−2 confirmations, none in clusters of three or
// fewer). Without them the timeout starts at SuspicionMaxTimeoutMult times
// that and shrinks as confirmations arrive. Lifeguard's awareness also
// stretches a member's own probe interval and timeout, up to
// AwarenessMaxMultiplier times, while it misses acks itself, so that a busy
// member slows its own verdicts instead of declaring healthy members dead.
//
// Both Lifeguard extensions slow down exactly the member the majority rule
// needs fast: one cut off from the others gets no confirmations and misses
// every ack, so with a maximum multiplier of 3 and memberlist's awareness
// of 8 it took 3 to 4.5 s to see the others gone while they saw it gone in
// about 1 s, and it answered beside the new owner meanwhile (make chaos). DefaultTiming turns both off, so
// that the two sides of a partition reach their verdicts at the same pace.
type Timing struct {
	// ProbeInterval is how often each member probes one other member.
	ProbeInterval time.Duration
	// ProbeTimeout is how long a direct probe waits for its ack before
	// asking others to probe indirectly.
	ProbeTimeout time.Duration
	// GossipInterval is how often suspicions, deaths and refutations are
	// sent to a few members besides riding on probes.
	GossipInterval time.Duration
	// SuspicionMult scales the suspicion timeout (above).
	SuspicionMult int
	// SuspicionMaxTimeoutMult bounds the suspicion timeout when no other
	// member confirms a suspicion.
	SuspicionMaxTimeoutMult int
	// AwarenessMaxMultiplier bounds how far a member that misses acks
	// stretches its own probe interval and timeout (1: not at all).
	AwarenessMaxMultiplier int
	// PushPullInterval is how often a member exchanges its whole state with
	// another over TCP, which heals a partition that gossip alone would not.
	PushPullInterval time.Duration
	// TCPTimeout bounds a join's or push/pull's TCP exchange, and so how
	// long joining a powered-off node's address blocks.
	TCPTimeout time.Duration
	// IsolationTimeout is how long an agent that reaches none of the other
	// agents (pinging up to three of them every probe interval) waits
	// before it takes itself for cut off and counts only itself alive.
	IsolationTimeout time.Duration
}

// DefaultTiming is tuned for failing an L2 address over within about 2 s of
// its node's agent dying: detection of about 1-1.5 s, the rest for the new
// owner to announce.
//
//   - ProbeInterval 200ms: in a cluster of n members each member probes each
//     other one every n intervals, and all of them together probe a given
//     member about once an interval, so a death is first suspected within
//     about 200-400ms. Five UDP probes a second per member are nothing for
//     a LAN (memberlist's default is 1s, tuned for detection in seconds).
//   - ProbeTimeout 100ms: a LAN's round trip is well under 1ms; 100ms leaves
//     room for a busy node's scheduler and GC before a probe goes indirect,
//     and indirect probes and the TCP fallback still have the rest of the
//     interval before the target is suspected.
//   - SuspicionMult 4: a suspicion timeout of 800ms up to 10 members (1.6s
//     at 100): the time a wrongly suspected member, say one paused by a
//     starved CPU, has to hear of it and refute. Detection ≈ 0.2-0.6s + 0.8s
//     ≈ 1-1.4s at the sizes L2 mode is used at (TestDetectionTime: 1.1-1.4s
//     on 127.0.0.1, up to 1.8s with the 2 cores saturated).
//   - SuspicionMaxTimeoutMult 1: a suspicion lasts 800ms, confirmed or not
//     (memberlist's 6 would be 4.8s without confirmations, which a member
//     cut off from the others never gets).
//   - AwarenessMaxMultiplier 1: no stretching (memberlist's 8). What it
//     guards against, a starved member declaring healthy ones dead, costs
//     little here: a wrongly suspected agent refutes within the 800ms
//     suspicion timeout, and if it cannot, its addresses move, which is
//     what a node that slow should have happen anyway.
//   - GossipInterval 100ms: suspicions reach the other members, and a
//     suspect's refutation reaches them, well inside the suspicion timeout.
//   - PushPullInterval 10s: a full state exchange with one member, cheap
//     at these sizes (memberlist stretches it above 32 members); a healed
//     partition merges within seconds without waiting for a join.
//   - TCPTimeout 2s: joins and push/pulls on a LAN finish in milliseconds; a
//     powered-off seed should not hold up a join for memberlist's 10s.
//   - IsolationTimeout 1s: five rounds of pings to up to three others, all
//     unanswered. An agent cut off from the others then falls silent
//     about 1-1.2s after the cut at any cluster size, while the others
//     declare it dead after one probe interval, the probe timeout and the
//     suspicion timeout (0.8s up to 10 agents, 1.2s at 30): ~1-1.2s at 3
//     agents, ~1.4-1.6s at 30. So the two answer together for ~0.2s at
//     most, and the cut-off one no longer needs about half the
//     cluster's probes to find itself in a minority (~4s at 30 agents).
//     Shorter would make a starved agent fall silent on a busy machine
//     while the others still count it alive, and nobody would answer.
func DefaultTiming() Timing {
	return Timing{
		ProbeInterval:           200 * time.Millisecond,
		ProbeTimeout:            100 * time.Millisecond,
		GossipInterval:          100 * time.Millisecond,
		SuspicionMult:           4,
		SuspicionMaxTimeoutMult: 1,
		AwarenessMaxMultiplier:  1,
		PushPullInterval:        10 * time.Second,
		TCPTimeout:              2 * time.Second,
		IsolationTimeout:        time.Second,
	}
}

// isolation is t's isolation timeout, or the default's.
func (t Timing) isolation() time.Duration {
	return or(t.IsolationTimeout, DefaultTiming().IsolationTimeout)
}

// apply sets t's fields, or the default's where t's are zero, on c.
func (t Timing) apply(c *memberlist.Config) {
	d := DefaultTiming()
	c.ProbeInterval = or(t.ProbeInterval, d.ProbeInterval)
	c.ProbeTimeout = or(t.ProbeTimeout, d.ProbeTimeout)
	c.GossipInterval = or(t.GossipInterval, d.GossipInterval)
	c.SuspicionMult = or(t.SuspicionMult, d.SuspicionMult)
	c.SuspicionMaxTimeoutMult = or(t.SuspicionMaxTimeoutMult, d.SuspicionMaxTimeoutMult)
	c.AwarenessMaxMultiplier = or(t.AwarenessMaxMultiplier, d.AwarenessMaxMultiplier)
	c.PushPullInterval = or(t.PushPullInterval, d.PushPullInterval)
	c.TCPTimeout = or(t.TCPTimeout, d.TCPTimeout)
}

func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
