package ipam

import (
	"errors"
	"math"
	"net/netip"
	"testing"
)

func TestParseRange(t *testing.T) {
	for _, tc := range []struct {
		in          string
		first, last string
		size        uint64
	}{
		{"198.18.100.0/24", "198.18.100.0", "198.18.100.255", 256},
		{"198.18.100.7/32", "198.18.100.7", "198.18.100.7", 1},
		{"198.18.101.10-198.18.101.20", "198.18.101.10", "198.18.101.20", 11},
		{" 198.18.101.250 - 198.18.102.5 ", "198.18.101.250", "198.18.102.5", 12},
		{"2001:db8:100::/120", "2001:db8:100::", "2001:db8:100::ff", 256},
		{"2001:db8::/64", "2001:db8::", "2001:db8::ffff:ffff:ffff:ffff", math.MaxUint64},
		{"2001:db8::/32", "2001:db8::", "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", math.MaxUint64},
	} {
		t.Run(tc.in, func(t *testing.T) {
			r, err := ParseRange(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if r.First.String() != tc.first || r.Last.String() != tc.last || r.Size() != tc.size {
				t.Errorf("got %s size %d", r, r.Size())
			}
			if !r.Contains(r.First) || !r.Contains(r.Last) || r.Nth(0) != r.First {
				t.Errorf("ends not contained")
			}
			if tc.size < math.MaxUint64 && r.Nth(tc.size-1) != r.Last {
				t.Errorf("Nth(size-1) = %s", r.Nth(tc.size-1))
			}
		})
	}
	for _, bad := range []string{"", "x", "198.18.100.1/24", "198.18.0.9-198.18.0.1", "198.18.0.1-2001:db8::1",
		"198.18.0.300/32", "::ffff:198.18.0.1/128", "fe80::1%eth0-fe80::2%eth0", "198.18.0.1-",
		"::/64", "::fffe:ffff:ffff-::ffff:0:1"} {
		if _, err := ParseRange(bad); !errors.Is(err, ErrBadRange) {
			t.Errorf("ParseRange(%q) = %v, want ErrBadRange", bad, err)
		}
	}
}

func TestRangeOverlapsAndNth(t *testing.T) {
	a, _ := ParseRange("198.18.100.0/24")
	b, _ := ParseRange("198.18.100.255-198.18.101.3")
	c, _ := ParseRange("198.18.101.4/32")
	v6, _ := ParseRange("2001:db8::/120")
	if !a.Overlaps(b) || !b.Overlaps(a) || a.Overlaps(c) || b.Overlaps(c) || a.Overlaps(v6) {
		t.Error("overlap wrong")
	}
	if got := b.Nth(2); got != netip.MustParseAddr("198.18.101.1") {
		t.Errorf("Nth across an octet: %s", got)
	}
	big, _ := ParseRange("2001:db8::ffff:ffff:ffff:fff0-2001:db8::1:0:0:0:f")
	if got := big.Nth(0x10); got != netip.MustParseAddr("2001:db8:0:1::") {
		t.Errorf("Nth across 64 bits: %s", got)
	}
	if big.Size() != 32 {
		t.Errorf("size across 64 bits: %d", big.Size())
	}
}
