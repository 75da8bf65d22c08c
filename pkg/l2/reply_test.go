package l2

import (
	"bytes"
	"net"
	"net/netip"
	"testing"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/ndp"
	"golang.org/x/net/ipv6"
)

var (
	ourMAC   = net.HardwareAddr{0x02, 0, 0, 0, 0, 1}
	theirMAC = net.HardwareAddr{0x02, 0, 0, 0, 0, 2}
	vip4     = netip.MustParseAddr("198.18.121.100")
	vip6     = netip.MustParseAddr("2001:db8:121::100")
)

func ours(a netip.Addr) bool { return a == vip4 || a == vip6 }

func arpFrame(t *testing.T, op arp.Operation, srcMAC net.HardwareAddr, srcIP, dstIP netip.Addr) []byte {
	t.Helper()
	p, err := arp.NewPacket(op, srcMAC, srcIP, ethernet.Broadcast, dstIP)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := p.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	fb, err := (&ethernet.Frame{Destination: ethernet.Broadcast, Source: srcMAC, EtherType: ethernet.EtherTypeARP, Payload: pb}).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return fb
}

func TestARPReply(t *testing.T) {
	client := netip.MustParseAddr("198.18.121.2")
	tests := []struct {
		name  string
		frame []byte
		want  bool
	}{
		{"request for our address", arpFrame(t, arp.OperationRequest, theirMAC, client, vip4), true},
		{"probe for our address (sender 0.0.0.0)", arpFrame(t, arp.OperationRequest, theirMAC, netip.IPv4Unspecified(), vip4), true},
		{"request for another address", arpFrame(t, arp.OperationRequest, theirMAC, client, netip.MustParseAddr("198.18.121.101")), false},
		{"our own request", arpFrame(t, arp.OperationRequest, ourMAC, client, vip4), false},
		{"someone's announcement of it", arpFrame(t, arp.OperationRequest, theirMAC, vip4, vip4), false},
		{"a reply", arpFrame(t, arp.OperationReply, theirMAC, client, vip4), false},
		{"garbage", []byte{1, 2, 3}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reply, dst, ok := arpReply(ourMAC, tc.frame, ours)
			if ok != tc.want {
				t.Fatalf("answered = %v, want %v", ok, tc.want)
			}
			if !ok {
				return
			}
			if reply.Operation != arp.OperationReply || reply.SenderIP != vip4 || !bytes.Equal(reply.SenderHardwareAddr, ourMAC) {
				t.Errorf("reply = %+v, want a reply from %s at %s", reply, vip4, ourMAC)
			}
			if !bytes.Equal(dst, theirMAC) || !bytes.Equal(reply.TargetHardwareAddr, theirMAC) {
				t.Errorf("reply goes to %s, want %s", dst, theirMAC)
			}
		})
	}
}

func TestNDPReply(t *testing.T) {
	client := netip.MustParseAddr("2001:db8:121::2").WithZone("eth0")
	ns := func(target netip.Addr) ndp.Message { return &ndp.NeighborSolicitation{TargetAddress: target} }
	onLink := &ipv6.ControlMessage{HopLimit: 255, IfIndex: 2}
	tests := []struct {
		name     string
		m        ndp.Message
		cm       *ipv6.ControlMessage
		src      netip.Addr
		want     bool
		wantDst  netip.Addr
		wantSoli bool
		wantOver bool
	}{
		{name: "solicitation for our address", m: ns(vip6), cm: onLink, src: client, want: true, wantDst: client, wantSoli: true, wantOver: true},
		// Not overriding: the answer to a DAD probe goes to every host, and
		// the prober may be the node that takes the address over.
		{name: "duplicate address detection", m: ns(vip6), cm: onLink, src: netip.IPv6Unspecified().WithZone("eth0"), want: true, wantDst: allNodes},
		{name: "another target", m: ns(netip.MustParseAddr("2001:db8:121::101")), cm: onLink, src: client},
		{name: "another interface", m: ns(vip6), cm: &ipv6.ControlMessage{HopLimit: 255, IfIndex: 3}, src: client},
		{name: "routed (hop limit below 255)", m: ns(vip6), cm: &ipv6.ControlMessage{HopLimit: 254, IfIndex: 2}, src: client},
		{name: "no control message", m: ns(vip6), src: client},
		{name: "not a solicitation", m: &ndp.NeighborAdvertisement{TargetAddress: vip6}, cm: onLink, src: client},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			na, dst, ok := ndpReply(ourMAC, 2, tc.m, tc.cm, tc.src, ours)
			if ok != tc.want {
				t.Fatalf("answered = %v, want %v", ok, tc.want)
			}
			if !ok {
				return
			}
			if dst != tc.wantDst || na.Solicited != tc.wantSoli || na.Override != tc.wantOver || na.TargetAddress != vip6 {
				t.Errorf("advertisement %+v to %s, want Solicited %v, Override %v, target %s, to %s", na, dst, tc.wantSoli, tc.wantOver, vip6, tc.wantDst)
			}
			lla, isLLA := na.Options[0].(*ndp.LinkLayerAddress)
			if len(na.Options) != 1 || !isLLA || lla.Direction != ndp.Target || !bytes.Equal(lla.Addr, ourMAC) {
				t.Errorf("options %v, want the target link-layer address %s", na.Options, ourMAC)
			}
		})
	}
}
