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

// SessionsOf reads the sessions of every role of roles that holds some, in
// their order; nil when none does.
func SessionsOf[R any](roles []R) func() []sessions.Peer {
	var srcs []Sessions
	for _, r := range roles {
		if s, ok := any(r).(Sessions); ok && s.Sessions() != nil {
			srcs = append(srcs, s)
		}
	}
	if len(srcs) == 0 {
		return nil
	}
	return func() []sessions.Peer {
		var out []sessions.Peer
		for _, s := range srcs {
			out = append(out, s.Sessions()...)
		}
		return out
	}
}
