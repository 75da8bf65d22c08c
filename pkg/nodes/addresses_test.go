package nodes

import (
	"net/netip"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestInternalIP(t *testing.T) {
	n := &v1.Node{Status: v1.NodeStatus{Addresses: []v1.NodeAddress{
		{Type: v1.NodeExternalIP, Address: "198.18.0.9"},
		{Type: v1.NodeInternalIP, Address: "2001:db8::1"},
		{Type: v1.NodeInternalIP, Address: "::ffff:198.18.0.1"},
		{Type: v1.NodeInternalIP, Address: "198.18.0.2"},
	}}}
	for _, tc := range []struct {
		v4   bool
		want string
	}{{true, "198.18.0.1"}, {false, "2001:db8::1"}} {
		got, ok := InternalIP(n, tc.v4)
		if !ok || got != netip.MustParseAddr(tc.want) {
			t.Errorf("InternalIP(v4=%v) = %v, %v; want %s", tc.v4, got, ok, tc.want)
		}
	}
	if _, ok := InternalIP(&v1.Node{}, true); ok {
		t.Error("a node without addresses has an InternalIP")
	}
}

func TestSourceTowardLoopback(t *testing.T) {
	got, err := SourceToward(netip.MustParseAddrPort("127.0.0.1:9"))
	if err != nil || !got.IsLoopback() {
		t.Errorf("SourceToward(127.0.0.1:9) = %v, %v; want a loopback address", got, err)
	}
}
