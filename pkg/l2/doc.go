// Package l2 answers ARP requests (IPv4) and IPv6 Neighbor Solicitations for
// LoadBalancer addresses on the node's own segment: the L2 announcement mode.
//
// For each address, one node, chosen elsewhere, runs a Responder that
// claims the address with the node's own MAC: it answers the questions of
// the segment's hosts and routers for it, and when it takes the address over
// it says so unasked (gratuitous ARP, unsolicited Neighbor Advertisement) so
// that neighbor caches and switches move to it at once instead of waiting
// for their entries to age out.
//
// The address is not assigned to any interface. Traffic for it reaches the
// node because the node's MAC was given out for it; from there kube-proxy's
// rules take it to the Service's endpoints. An assigned address would make
// the kernel answer for it on every interface and every node it was put on,
// would be picked as a source address for the node's own traffic, and would
// have to be removed again on failover before another node could claim it;
// answering from user space keeps the claim to the one node that holds it
// and lets it move with one call. Only CAP_NET_RAW is needed: an ARP packet
// socket per interface and a raw ICMPv6 socket per interface for NDP.
package l2
