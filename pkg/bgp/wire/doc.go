// Package wire encodes and decodes BGP-4 messages (RFC 4271) for a speaker
// that only originates routes: it encodes what such a speaker sends (OPEN,
// KEEPALIVE, NOTIFICATION, UPDATE for IPv4 and IPv6 unicast, End-of-RIB)
// and decodes what it must read from a router (OPEN, NOTIFICATION,
// ROUTE-REFRESH, and UPDATEs far enough to recognise End-of-RIB and skip
// the rest safely).
//
// Encoders append to a caller's []byte, so that one buffer per peer can be
// reused for every message: a path store shared by all peers encodes each
// peer's UPDATEs from it rather than keeping a copy of every path per peer.
// Decoders check every length against the bytes they were given, and
// return an error wrapping one of the sentinel errors below for malformed
// input; they never read out of range.
//
// Sending: Open.AppendTo, AppendKeepalive, Notification.AppendTo (Shutdown
// for a Cease with a shutdown communication), Packer.Announce and
// AppendWithdraw for many routes (as few UPDATEs as hold them),
// Update.AppendTo for one message, AppendEndOfRIB. Reading: Split (one
// message off a stream), DecodeOpen and Negotiate (what both OPENs agree
// on, and the Options to encode with), DecodeUpdate, DecodeNotification,
// DecodeRouteRefresh.
//
// Extended messages (RFC 8654) are not used: no message is longer than
// MaxMessageLen, and the capability is never offered.
package wire
