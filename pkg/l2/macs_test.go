package l2

import (
	"fmt"
	"net"
	"net/netip"
	"testing"
)

func TestReachMACs(t *testing.T) {
	ifaces := testInterfaces()
	for i := range ifaces {
		if ifaces[i].ethernet() {
			ifaces[i].HardwareAddr = net.HardwareAddr{0x02, 0, 0, 0, 0, byte(i)}
		}
	}
	all := func(netip.Prefix) bool { return true }
	for _, tc := range []struct {
		name  string
		names []string
		keep  func(netip.Prefix) bool
		most  int
		want  string
	}{
		{"every up Ethernet interface on a pool's segment", nil, all, 8, "[02:00:00:00:00:01 02:00:00:00:00:02 02:00:00:00:00:05]"},
		{"bounded", nil, all, 1, "[02:00:00:00:00:01]"},
		{"a pool on a down interface's segment only", nil, func(p netip.Prefix) bool { return p == netip.MustParsePrefix("198.18.123.0/24") }, 8, "[]"},
		{"named, Ethernet only", []string{"eth1", "tun0", "nope0"}, all, 8, "[02:00:00:00:00:02]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fmt.Sprint(reachMACsOf(ifaces, tc.names, tc.keep, tc.most)); got != tc.want {
				t.Errorf("MACs %s, want %s", got, tc.want)
			}
		})
	}
}
