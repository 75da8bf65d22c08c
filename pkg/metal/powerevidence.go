package metal

import (
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
)

// powerEvidence remembers the last conclusion about each node, so that an
// Event is recorded when it changes and not on every question of the node
// lifecycle controller (every few seconds for each NotReady node).
type powerEvidence struct {
	mu   sync.Mutex
	last map[string]string // node name -> reason of the last conclusion
}

// conclude returns the Event to record for node's new conclusion, or ""
// when it did not change. A first On is no news: every node starts so.
func (e *powerEvidence) conclude(node string, off bool, err error) (eventType, reason string) {
	reason = ReasonPoweredOn
	switch {
	case err != nil:
		reason = ReasonPowerStateUnknown
	case off:
		reason = ReasonPoweredOff
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.last == nil {
		e.last = map[string]string{}
	}
	prev, seen := e.last[node]
	e.last[node] = reason
	if prev == reason || (!seen && reason == ReasonPoweredOn) {
		return "", ""
	}
	if reason == ReasonPoweredOn {
		return v1.EventTypeNormal, reason
	}
	return v1.EventTypeWarning, reason
}

// powerEvent records the evidence of a changed conclusion on the node.
func (c *Cloud) powerEvent(node *v1.Node, source string, off bool, err error, at time.Time) {
	eventType, reason := c.power.conclude(node.Name, off, err)
	switch reason {
	case "":
	case ReasonPoweredOff:
		c.eventf(node, eventType, reason, "Power-state source %s says the machine is off (asked at %s): the node is reported shut down", source, at.UTC().Format(time.RFC3339))
	case ReasonPoweredOn:
		c.eventf(node, eventType, reason, "Power-state source %s says the machine is on (asked at %s)", source, at.UTC().Format(time.RFC3339))
	default:
		c.eventf(node, eventType, reason, "Power-state source %s cannot tell (asked at %s): %v; the node is not reported shut down", source, at.UTC().Format(time.RFC3339), err)
	}
}
