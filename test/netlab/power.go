package netlab

import "fmt"

// SetNodeLink sets the router-side end of node i's link down or up. Down,
// the node is as if powered off for the network: nothing reaches it and it
// answers nothing, not even a reset, while its own processes run on.
func (l *Lab) SetNodeLink(i int, up bool) error {
	if i < 0 || i >= len(l.Nodes) {
		return fmt.Errorf("netlab: no node %d", i)
	}
	state := "down"
	if up {
		state = "up"
	}
	return ipn(l.Router, "link", "set", "dev", fmt.Sprintf("n%d", i), state)
}
