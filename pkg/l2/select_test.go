package l2

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// testInterfaces are a node's interfaces: loopback, two segments, one
// down, a tunnel, and a wide prefix.
func testInterfaces() []iface {
	mac := net.HardwareAddr{0x02, 0, 0, 0, 0, 1}
	pfx := func(s ...string) []netip.Prefix {
		var out []netip.Prefix
		for _, p := range s {
			out = append(out, netip.MustParsePrefix(p))
		}
		return out
	}
	up := net.FlagUp | net.FlagBroadcast | net.FlagMulticast
	return []iface{
		{Name: "lo", Index: 1, Flags: net.FlagUp | net.FlagLoopback, Prefixes: pfx("127.0.0.1/8", "::1/128")},
		{Name: "eth0", Index: 2, Flags: up, HardwareAddr: mac, Prefixes: pfx("198.18.121.1/24", "2001:db8:121::1/64", "fe80::1/64")},
		{Name: "eth1", Index: 3, Flags: up, HardwareAddr: mac, Prefixes: pfx("198.18.122.1/24")},
		{Name: "down0", Index: 4, Flags: net.FlagBroadcast, HardwareAddr: mac, Prefixes: pfx("198.18.123.1/24", "2001:db8:123::1/64")},
		{Name: "tun0", Index: 5, Flags: net.FlagUp | net.FlagPointToPoint, Prefixes: pfx("198.18.124.1/24")},
		{Name: "wide0", Index: 6, Flags: up, HardwareAddr: mac, Prefixes: pfx("198.18.0.1/15")},
	}
}

func TestSelectInterfaces(t *testing.T) {
	ifaces := testInterfaces()
	tests := []struct {
		name    string
		addr    string
		names   []string
		want    []string
		wantErr error
	}{
		{name: "IPv4 on the interface whose prefix contains it, and the wider one", addr: "198.18.121.100", want: []string{"eth0", "wide0"}},
		{name: "IPv4 on the other segment", addr: "198.18.122.7", want: []string{"eth1", "wide0"}},
		{name: "IPv6", addr: "2001:db8:121::100", want: []string{"eth0"}},
		{name: "no prefix contains it", addr: "2001:db8:999::1", wantErr: ErrNoInterface},
		{name: "interface down", addr: "198.18.123.5", want: []string{"wide0"}},
		{name: "only a down interface", addr: "2001:db8:123::5", wantErr: ErrNoInterface},
		{name: "loopback never", addr: "127.0.0.5", wantErr: ErrNoInterface},
		{name: "no Ethernet address", addr: "198.18.124.9", want: []string{"wide0"}},
		{name: "named, whatever the prefixes", addr: "2001:db8:999::1", names: []string{"eth1"}, want: []string{"eth1"}},
		{name: "named twice", addr: "198.18.121.100", names: []string{"eth1", "eth1", "eth0"}, want: []string{"eth1", "eth0"}},
		{name: "named, one missing", addr: "198.18.121.100", names: []string{"eth0", "nope0"}, want: []string{"eth0"}, wantErr: ErrInterfaceNotFound},
		{name: "named, no Ethernet address", addr: "198.18.121.100", names: []string{"tun0"}, wantErr: ErrNoInterface},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			addr := netip.MustParseAddr(tc.addr)
			got, err := selectInterfaces(addr, ifaces, tc.names)
			var names []string
			for _, ifc := range got {
				names = append(names, ifc.Name)
			}
			if !slices.Equal(names, tc.want) {
				t.Errorf("interfaces = %v, want %v", names, tc.want)
			}
			if !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
				t.Fatalf("error = %v, want one wrapping %v", err, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), tc.addr) {
				t.Errorf("error %q does not name the address %s", err, tc.addr)
			}
			if errors.Is(tc.wantErr, ErrInterfaceNotFound) && !strings.Contains(err.Error(), "nope0") {
				t.Errorf("error %q does not name the missing interface", err)
			}
		})
	}
}

func TestReach(t *testing.T) {
	ifaces := testInterfaces()
	inPools := func(pools ...string) func(netip.Prefix) bool {
		return func(p netip.Prefix) bool {
			return slices.ContainsFunc(pools, func(s string) bool { return netip.MustParsePrefix(s).Overlaps(p) })
		}
	}
	tests := []struct {
		name    string
		names   []string
		keep    func(netip.Prefix) bool
		wantAny bool
		want    string
	}{
		{name: "every up Ethernet prefix, masked and sorted", keep: func(netip.Prefix) bool { return true },
			want: "[198.18.0.0/15 198.18.121.0/24 198.18.122.0/24 2001:db8:121::/64 fe80::/64]"},
		{name: "only those that overlap a pool", keep: inPools("198.18.122.200/29", "2001:db8:121::200/120"),
			want: "[198.18.0.0/15 198.18.122.0/24 2001:db8:121::/64]"},
		{name: "a pool on a down interface's segment only", keep: inPools("2001:db8:123::/64"), want: "[]"},
		{name: "named: any address", names: []string{"nope0", "eth1"}, keep: inPools(), wantAny: true, want: "[]"},
		{name: "named, none there", names: []string{"nope0"}, keep: inPools(), want: "[]"},
		{name: "named, no Ethernet address", names: []string{"tun0"}, keep: inPools(), want: "[]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			anyAddr, reach := reachOf(ifaces, tc.names, tc.keep)
			if anyAddr != tc.wantAny || fmt.Sprint(reach) != tc.want {
				t.Errorf("reach = %v, %v; want %v, %s", anyAddr, reach, tc.wantAny, tc.want)
			}
		})
	}
}
