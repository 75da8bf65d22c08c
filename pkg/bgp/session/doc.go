// Package session is one BGP session of a speaker that originates routes
// and accepts none: the TCP connection to the router (with TCP MD5
// signatures, the TTL rules of eBGP multihop and GTSM, a source address or
// a link-local neighbour), the OPEN exchange and what it negotiates, and
// then keepalives, the hold timer and the messages a router may send (its
// End-of-RIB, a route refresh, a NOTIFICATION). Sending the speaker's
// paths is the caller's: Send writes UPDATEs encoded for what the session
// negotiated.
//
// It is the transport of the speaker's own path store (pkg/bgp): one store
// shared by every peer, where a BGP library keeps a table per peer.
package session
