package announcer

import "github.com/metal-ccm/metal-ccm/pkg/bgp/limits"

// MaxNextHops is the most next hops one address can be announced with: the
// BGP speaker's ADD-PATH limit. An address with more eligible nodes keeps
// the ones rendezvous.Pick chooses.
const MaxNextHops = limits.MaxNextHops
