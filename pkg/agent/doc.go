// Package agent is the node agent (cmd/metal-node-agent): it runs on every
// node and announces, with each protocol that gives the node agents work
// (pkg/protocol: BGP with bgp.announceFrom Nodes, each node its own next
// hop; L2 for the pools announced so, one node answering for each
// address), the LoadBalancer addresses its own node carries. It needs no
// leader election and writes nothing to the API server: it reads Services,
// Nodes and EndpointSlices, as the replicas' announcer does.
package agent
