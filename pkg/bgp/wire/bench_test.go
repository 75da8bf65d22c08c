package wire

import (
	"net/netip"
	"testing"
)

// BenchmarkAnnounce packs 10,000 IPv4 host routes with path identifiers
// into a reused buffer, as a speaker sends a peer its table.
func BenchmarkAnnounce(b *testing.B) {
	routes := hostRoutes(10000, false)
	p, err := NewPacker(IPv4Unicast, &Attributes{ASPath: []uint32{65001}}, netip.MustParseAddr("198.18.0.1"), netip.Addr{},
		Options{FourOctetAS: true, AddPath: true})
	if err != nil {
		b.Fatal(err)
	}
	buf, err := p.Announce(nil, routes)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		if buf, err = p.Announce(buf[:0], routes); err != nil {
			b.Fatal(err)
		}
	}
}
