package bgp

import (
	"errors"
	"fmt"
	"net/netip"

	v1 "k8s.io/api/core/v1"

	"github.com/metal-ccm/metal-ccm/pkg/annotation"
	"github.com/metal-ccm/metal-ccm/pkg/bgp/community"
	"github.com/metal-ccm/metal-ccm/pkg/config"
)

// ErrCommunityNotAllowed marks a community a Service asks for that its
// address's pool does not allow.
var ErrCommunityNotAllowed = errors.New("community not allowed by the pool")

// ServiceCommunities are the communities svc adds to the paths of its
// address addr: those of its annotation when its pool allows every one of
// them, else none, with an error that wraps community.ErrInvalid (the
// annotation cannot be read) or ErrCommunityNotAllowed. It is the one rule:
// the announcers apply it, and the leader reports its errors as Events.
func ServiceCommunities(lb *config.LoadBalancer, svc *v1.Service, addr netip.Addr) (community.Set, error) {
	raw := svc.Annotations[string(annotation.NameBGPCommunities)]
	if raw == "" {
		return community.Set{}, nil
	}
	set, err := community.ParseList(raw)
	if err != nil {
		return community.Set{}, fmt.Errorf("%s: %w", string(annotation.NameBGPCommunities), err)
	}
	var allowed community.Set
	pool := lb.PoolOf(addr)
	if pool != nil {
		allowed = pool.AllowedServiceCommunities()
	}
	if out := set.Outside(allowed); !out.Empty() {
		where := "no pool"
		if pool != nil {
			where = "pool " + pool.Name
		}
		return community.Set{}, fmt.Errorf("%s: %s of %s: %w (%s allows %q); the address is announced without the annotation's communities",
			string(annotation.NameBGPCommunities), out, addr, ErrCommunityNotAllowed, where, allowed.String())
	}
	return set, nil
}

// AnnouncedCommunities is ServiceCommunities for an announcer
// (announcer.Options.Communities): an address whose annotation is refused
// goes out without it, and the leader's Event tells why, so the error is
// not reported a second time by every replica and agent.
func AnnouncedCommunities(lb *config.LoadBalancer) func(*v1.Service, netip.Addr) community.Set {
	return func(svc *v1.Service, addr netip.Addr) community.Set {
		c, _ := ServiceCommunities(lb, svc, addr) // the error is the leader's Event
		return c
	}
}
