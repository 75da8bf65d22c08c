package community

import (
	"errors"
	"math"
	"testing"
)

func TestLinkBandwidth(t *testing.T) {
	for _, tc := range []struct {
		name      string
		asn       uint32
		endpoints int
		bytes     [8]byte
		str       string // String, as FRR begins its own
		count     int    // Endpoints read back
	}{
		// 125,000 bytes/s is 0x47F42400 as an IEEE 754 float.
		{"one endpoint", 64512, 1, [8]byte{0x40, 0x04, 0xFC, 0x00, 0x47, 0xF4, 0x24, 0x00}, "LB:64512:125000", 1},
		// 375,000 = 1.430511474609375 * 2^18: 0x48B71B00.
		{"three endpoints", 64512, 3, [8]byte{0x40, 0x04, 0xFC, 0x00, 0x48, 0xB7, 0x1B, 0x00}, "LB:64512:375000", 3},
		{"a four-octet AS is AS_TRANS", 4200000000, 1, [8]byte{0x40, 0x04, 0x5B, 0xA0, 0x47, 0xF4, 0x24, 0x00}, "LB:23456:125000", 1},
		{"the largest two-octet AS", 65535, 1, [8]byte{0x40, 0x04, 0xFF, 0xFF, 0x47, 0xF4, 0x24, 0x00}, "LB:65535:125000", 1},
		{"none counts as one", 64512, 0, [8]byte{0x40, 0x04, 0xFC, 0x00, 0x47, 0xF4, 0x24, 0x00}, "LB:64512:125000", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lb := ForEndpoints(tc.asn, tc.endpoints)
			if got := lb.Bytes(); got != tc.bytes {
				t.Errorf("Bytes() = % x, want % x", got, tc.bytes)
			}
			if got := lb.String(); got != tc.str {
				t.Errorf("String() = %q, want %q", got, tc.str)
			}
			back, err := ParseLinkBandwidth(tc.bytes[:])
			if err != nil {
				t.Fatal(err)
			}
			if back != lb || back.Endpoints() != tc.count {
				t.Errorf("ParseLinkBandwidth = %+v (%d endpoints), want %+v (%d)", back, back.Endpoints(), lb, tc.count)
			}
		})
	}
}

// TestLinkBandwidthLimits checks that the largest count fits the 32 bits of
// bytes per second FRR reads, and counts past it are capped.
func TestLinkBandwidthLimits(t *testing.T) {
	for _, n := range []int{MaxEndpoints, MaxEndpoints + 1, math.MaxInt32} {
		lb := ForEndpoints(64512, n)
		if bw := float64(lb.BytesPerSecond); bw > math.MaxUint32 || lb.Endpoints() != MaxEndpoints {
			t.Errorf("ForEndpoints(%d) = %v bytes/s (%d endpoints), want at most %d bytes/s (%d endpoints)",
				n, bw, lb.Endpoints(), uint64(math.MaxUint32), MaxEndpoints)
		}
	}
	// Every count up to a node's pod limit is exact.
	for n := 1; n <= 1024; n++ {
		if got := ForEndpoints(1, n).Endpoints(); got != n {
			t.Fatalf("ForEndpoints(%d).Endpoints() = %d", n, got)
		}
	}
}

func TestParseLinkBandwidthRefuses(t *testing.T) {
	for _, b := range [][]byte{
		nil,
		{0x40, 0x04, 0, 0, 0, 0, 0},             // short
		{0x40, 0x04, 0, 0, 0, 0, 0, 0, 0},       // long
		{0x40, 0x02, 0, 1, 0, 0, 0, 1},          // a route target
		{0x01, 0x04, 0, 1, 0x47, 0xF4, 0x24, 0}, // IPv4-address-specific
	} {
		if _, err := ParseLinkBandwidth(b); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseLinkBandwidth(% x) = %v, want an error wrapping ErrInvalid", b, err)
		}
	}
	// FRR sends its own transitive by default (type 0x00): read too.
	lb, err := ParseLinkBandwidth([]byte{0x00, 0x04, 0xFC, 0x00, 0x47, 0xF4, 0x24, 0x00})
	if err != nil || lb.Endpoints() != 1 {
		t.Errorf("transitive: %+v, %v", lb, err)
	}
}
