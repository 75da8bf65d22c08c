// Package agent is the node agent (cmd/metal-node-agent): with
// bgp.announceFrom Nodes, it runs on every node and announces over BGP the
// LoadBalancer addresses its own node carries, with the node itself as next
// hop, to the peers whose nodeSelector matches the node. It needs no leader
// election and writes nothing to the API server: it reads Services, Nodes
// and EndpointSlices, as the replicas' announcer does.
package agent
