// Package member tells a node agent which node agents are alive, and whether
// it may answer for L2 addresses at all.
//
// In L2 mode each LoadBalancer address is answered (ARP/NDP) by one node,
// which every agent chooses on its own from the same inputs: the address's
// eligible nodes that are among the agents alive here. Liveness comes from a
// gossip membership (hashicorp/memberlist, SWIM with Lifeguard) among the
// agents, which the CCM joins as an observer to watch it. HasQuorum is the
// rule that keeps an agent cut off from the others from answering too.
package member
