package member

// HasQuorum tells whether the alive names that are also expected are a
// strict majority of the expected ones; with nothing expected there is no
// majority.
//
// An agent answers for addresses only while it has quorum, so that a
// partition cannot make two agents answer for one address: an agent cut off
// from the others sees at most a minority of them alive and stops answering,
// while the majority side fails its addresses over among themselves.
//
// expected comes from the API server (the nodes that should run an agent and
// are Ready), not from the membership: memberlist forgets members some time
// after they die, so counting its own list would let a lone agent, once it
// has forgotten everybody else, see itself as a majority of one. Names alive
// but not expected (a node not Ready yet) count for nothing.
func HasQuorum(alive []string, expected []string) bool {
	want := make(map[string]bool, len(expected))
	for _, name := range expected {
		want[name] = false
	}
	if len(want) == 0 {
		return false
	}
	seen := 0
	for _, name := range alive {
		if counted, ok := want[name]; ok && !counted {
			want[name] = true
			seen++
		}
	}
	return 2*seen > len(want)
}
