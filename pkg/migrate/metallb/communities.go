package metallb

import (
	"strings"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/community"
)

// largePrefix marks a large community in MetalLB's notation
// ("large:64512:1:2").
const largePrefix = "large:"

// aliases maps each Community resource's names to their values.
func (c *converter) aliases() map[string]string {
	out := map[string]string{}
	for _, cm := range c.in.communities {
		for _, a := range cm.Spec.Communities {
			if _, dup := out[a.Name]; dup {
				c.rep.Add(ref(KindCommunity, &cm.object), "spec.communities", "the alias %s is defined twice: the first is used", a.Name)
				continue
			}
			out[a.Name] = a.Value
		}
	}
	return out
}

// resolve turns one community of an advertisement (a value or an alias)
// into a standard or a large community in this project's notation; ok is
// false when it is neither.
func resolve(v string, aliases map[string]string) (value string, large, ok bool) {
	if a, found := aliases[v]; found {
		v = a
	}
	if rest, isLarge := strings.CutPrefix(v, largePrefix); isLarge {
		l, err := community.ParseLarge(rest)
		if err != nil {
			return "", false, false
		}
		return l.String(), true, true
	}
	s, err := community.ParseStandard(v)
	if err != nil {
		return "", false, false
	}
	return s.String(), false, true
}
