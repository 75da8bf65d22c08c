// Package community reads and writes BGP communities: standard ones (RFC
// 1997, "65000:100" or a well-known name such as "no-export") and large ones
// (RFC 8092, "64512:1:2"). It is a leaf package, so that the config's
// validation, the speaker and the Service annotation read them with one
// parser.
package community

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ErrInvalid marks a string that is not a community.
var ErrInvalid = errors.New("not a BGP community")

// Community is a standard community: the high 16 bits are an AS number,
// the low 16 bits a value of that AS's choosing.
type Community uint32

// Large is a large community: global administrator (an AS number) and two
// values of its choosing.
type Large struct {
	Global, Local1, Local2 uint32
}

// wellKnown are the names of the well-known communities (IANA's registry
// of BGP well-known communities), as routers' configs write them.
var wellKnown = map[string]Community{
	"graceful-shutdown":   0xFFFF0000, // RFC 8326
	"accept-own":          0xFFFF0001, // RFC 7611
	"llgr-stale":          0xFFFF0006, // RFC 9494
	"no-llgr":             0xFFFF0007, // RFC 9494
	"blackhole":           0xFFFF029A, // RFC 7999
	"no-export":           0xFFFFFF01, // RFC 1997
	"no-advertise":        0xFFFFFF02, // RFC 1997
	"no-export-subconfed": 0xFFFFFF03, // RFC 1997 (also called local-as)
	"no-peer":             0xFFFFFF04, // RFC 3765
}

// Names are the well-known names Parse accepts, sorted.
func Names() []string {
	out := make([]string, 0, len(wellKnown))
	for n := range wellKnown {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// String writes c as "AS:value", or by its well-known name.
func (c Community) String() string {
	for n, v := range wellKnown {
		if v == c {
			return n
		}
	}
	return fmt.Sprintf("%d:%d", uint32(c)>>16, uint32(c)&0xFFFF)
}

// String writes l as "global:local1:local2".
func (l Large) String() string { return fmt.Sprintf("%d:%d:%d", l.Global, l.Local1, l.Local2) }

// Compare orders large communities by their three parts.
func (l Large) Compare(o Large) int {
	if c := compare(l.Global, o.Global); c != 0 {
		return c
	}
	if c := compare(l.Local1, o.Local1); c != 0 {
		return c
	}
	return compare(l.Local2, o.Local2)
}

func compare(a, b uint32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// ParseStandard reads a standard community: "AS:value" with both parts
// from 0 to 65535, or a well-known name (case-insensitive).
func ParseStandard(s string) (Community, error) {
	if c, ok := wellKnown[strings.ToLower(s)]; ok {
		return c, nil
	}
	parts := strings.Split(s, ":")
	if len(parts) != 2 {
		return 0, fmt.Errorf("%q: %w: want AS:value (0 to 65535 each) or one of %s", s, ErrInvalid, strings.Join(Names(), ", "))
	}
	var v [2]uint32
	for i, p := range parts {
		n, err := parseUint(p, 16)
		if err != nil {
			return 0, fmt.Errorf("%q: %w: part %d: %w", s, ErrInvalid, i+1, err)
		}
		v[i] = n
	}
	return Community(v[0]<<16 | v[1]), nil
}

// ParseLarge reads a large community: "global:local1:local2", each from 0
// to 4294967295.
func ParseLarge(s string) (Large, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return Large{}, fmt.Errorf("%q: %w: want global:local1:local2 (0 to 4294967295 each)", s, ErrInvalid)
	}
	var v [3]uint32
	for i, p := range parts {
		n, err := parseUint(p, 32)
		if err != nil {
			return Large{}, fmt.Errorf("%q: %w: part %d: %w", s, ErrInvalid, i+1, err)
		}
		v[i] = n
	}
	return Large{v[0], v[1], v[2]}, nil
}

// parseUint reads a decimal number of at most bits bits, digits only (no
// sign, no spaces), as routers write communities.
func parseUint(s string, bits int) (uint32, error) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not a decimal number", s)
	}
	n, err := strconv.ParseUint(s, 10, bits)
	if err != nil {
		return 0, fmt.Errorf("%q is larger than %d", s, uint64(1)<<bits-1)
	}
	return uint32(n), nil //nolint:gosec // ParseUint checked bits <= 32
}

// Set is some standard and large communities, each sorted and without
// duplicates (Normalize).
type Set struct {
	Standard []Community
	Large    []Large
}

// Parse reads one community of either kind: two parts or a well-known name
// make a standard one, three parts a large one.
func (s *Set) Parse(text string) error {
	if strings.Count(text, ":") == 2 {
		l, err := ParseLarge(text)
		if err != nil {
			return err
		}
		s.Large = append(s.Large, l)
		return nil
	}
	c, err := ParseStandard(text)
	if err != nil {
		return err
	}
	s.Standard = append(s.Standard, c)
	return nil
}

// ParseList reads a comma-separated list of communities of either kind
// (spaces around each are allowed); a blank list is the empty set.
func ParseList(text string) (Set, error) {
	var s Set
	if strings.TrimSpace(text) == "" {
		return s, nil
	}
	var errs []error
	for _, part := range strings.Split(text, ",") {
		if err := s.Parse(strings.TrimSpace(part)); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Set{}, err
	}
	s.Normalize()
	return s, nil
}

// Normalize sorts both lists and drops duplicates.
func (s *Set) Normalize() {
	slices.Sort(s.Standard)
	s.Standard = slices.Compact(s.Standard)
	slices.SortFunc(s.Large, Large.Compare)
	s.Large = slices.Compact(s.Large)
}

// Empty reports whether s has no community.
func (s Set) Empty() bool { return len(s.Standard) == 0 && len(s.Large) == 0 }

// Union is the communities of s and o, normalized.
func (s Set) Union(o Set) Set {
	if o.Empty() {
		return s
	}
	if s.Empty() {
		return o
	}
	out := Set{
		Standard: append(slices.Clone(s.Standard), o.Standard...),
		Large:    append(slices.Clone(s.Large), o.Large...),
	}
	out.Normalize()
	return out
}

// Equal reports whether s and o hold the same communities (both normalized).
func (s Set) Equal(o Set) bool {
	return slices.Equal(s.Standard, o.Standard) && slices.Equal(s.Large, o.Large)
}

// Outside are the communities of s that allowed does not hold (both
// normalized), or the empty set.
func (s Set) Outside(allowed Set) Set {
	var out Set
	for _, c := range s.Standard {
		if _, in := slices.BinarySearch(allowed.Standard, c); !in {
			out.Standard = append(out.Standard, c)
		}
	}
	for _, l := range s.Large {
		if _, in := slices.BinarySearchFunc(allowed.Large, l, Large.Compare); !in {
			out.Large = append(out.Large, l)
		}
	}
	return out
}

// String writes s as ParseList reads it.
func (s Set) String() string {
	parts := make([]string, 0, len(s.Standard)+len(s.Large))
	for _, c := range s.Standard {
		parts = append(parts, c.String())
	}
	for _, l := range s.Large {
		parts = append(parts, l.String())
	}
	return strings.Join(parts, ",")
}
