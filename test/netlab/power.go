package netlab

import "fmt"

// SetNodeLink sets the router-side end of node i's link down or up. Down,
// the node is as if powered off for the network: nothing reaches it and it
// answers nothing, not even a reset, while its own processes run on.
func (l *Lab) SetNodeLink(i int, up bool) error {
	if i < 0 || i >= len(l.Nodes) {
		return fmt.Errorf("netlab: no node %d", i)
	}
	return setLink(l.Router, fmt.Sprintf("n%d", i), up)
}

// setLink sets link dev of namespace ns down or up.
func setLink(ns, dev string, up bool) error {
	state := "down"
	if up {
		state = "up"
	}
	return ipn(ns, "link", "set", "dev", dev, state)
}
