// Package limits holds the BGP speaker's limits and defaults, the one source
// for the speaker (pkg/bgp) and the cloud-config's validation and defaults
// (pkg/config). It imports nothing, so that the config does not pull in the
// BGP library.
package limits

import "time"

// Defaults of a peer's optional settings.
const (
	DefaultPort        = 179
	DefaultHoldTime    = 90 * time.Second
	DefaultRestartTime = 120 * time.Second
)

// The protocol's bounds on the configurable timers.
const (
	// MinHoldTime and MaxHoldTime bound a non-zero hold time (RFC 4271: 0,
	// or at least 3 seconds; a 16-bit field).
	MinHoldTime = 3 * time.Second
	MaxHoldTime = 65535 * time.Second
	// MinRestartTime and MaxRestartTime bound the graceful-restart time
	// (RFC 4724: a 12-bit field of seconds; 0 would tell the router to keep
	// nothing).
	MinRestartTime = time.Second
	MaxRestartTime = 4095 * time.Second
)

// MaxNextHops is the most paths per prefix: the speaker's ADD-PATH send-max
// is a byte, and it asks for all of them.
const MaxNextHops = 255

// BFD (RFC 5880) of a peer: the defaults (FRR's and a common router
// profile: a dead neighbour seen in under a second) and the bounds.
const (
	DefaultBFDInterval   = 300 * time.Millisecond
	DefaultBFDMultiplier = 3
	// MinBFDInterval is the shortest receive or transmit interval: below
	// it a process's timers (and a loaded node's scheduler) make false
	// failures likely. MaxBFDInterval keeps detection under a minute.
	MinBFDInterval = 50 * time.Millisecond
	MaxBFDInterval = 10 * time.Second
	// MinBFDMultiplier and MaxBFDMultiplier bound the detect multiplier
	// (a byte; 1 would take one lost packet for a failure).
	MinBFDMultiplier = 2
	MaxBFDMultiplier = 255
)
