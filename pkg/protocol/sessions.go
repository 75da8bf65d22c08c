package protocol

import "github.com/metal-ccm/metal-ccm/pkg/sessions"

// Sessions is a Replica or an Agent that holds sessions with routers (BGP).
// The runtimes publish them in the API server (pkg/sessions) for the
// status command; a role without sessions does not implement it.
type Sessions interface {
	// Sessions are the role's sessions now, nil when it holds none (BGP
	// in a replica with announceFrom Nodes).
	Sessions() []sessions.Peer
}
