package sessions

import "testing"

// TestKeyHasBFD: a change of a session's BFD state is a change of the
// sessions' state (a write), as a change of its BGP state is.
func TestKeyHasBFD(t *testing.T) {
	up := []Peer{{Protocol: "BGP", Address: "198.18.0.1", State: "established", BFD: "up"}}
	down := []Peer{{Protocol: "BGP", Address: "198.18.0.1", State: "established", BFD: "down"}}
	none := []Peer{{Protocol: "BGP", Address: "198.18.0.1", State: "established"}}
	if key(up) == key(down) || key(up) == key(none) || key(down) == key(none) {
		t.Errorf("keys %q, %q, %q: want three", key(up), key(down), key(none))
	}
}
