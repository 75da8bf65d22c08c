package netlab

import (
	"net/netip"
	"testing"
)

// birdShowProtocolsAll is `birdc show protocols all` of BIRD 2.0 with one
// established session that offers ADD-PATH receive, one connecting while the
// neighbor's graceful restart is in progress, and one that is down.
const birdShowProtocolsAll = `BIRD 2.0.12 ready.
Name       Proto      Table      State  Since         Info
device1    Device     ---        up     15:58:00.001
spk4_0     BGP        ---        up     15:58:01.123  Established
  BGP state:          Established
    Neighbor address: 198.18.10.2
    Neighbor AS:      64512
    Local AS:         64500
    Neighbor ID:      198.18.10.2
    Local capabilities
      Multiprotocol
        AF announced: ipv4
      Route refresh
      ADD-PATH
        RX: ipv4
        TX:
    Neighbor capabilities
      Multiprotocol
        AF announced: ipv4
      ADD-PATH
        RX:
        TX: ipv4
  Channel ipv4
    State:          UP
    Routes:         127 imported, 0 exported, 127 preferred
    Route change stats:     received   rejected   filtered    ignored   accepted
      Import updates:            120          0          0          0        120
      Import withdraws:           30          0        ---          0         30
      Export updates:              0          0          0        ---          0
spk6_0     BGP        ---        start  15:58:01.123  Active        Socket: Connection refused
  BGP state:          Active
    Neighbor address: 2001:db8:10::2
    Neighbor AS:      64512
    Local AS:         64500
    Neighbor graceful restart active
    Local capabilities
      ADD-PATH
        RX:
        TX: ipv6
  Channel ipv6
    Route change stats:     received   rejected   filtered    ignored   accepted
      Import updates:            ---          0          0          0          0
spk4_1     BGP        ---        down
`

func TestParseBirdProtocols(t *testing.T) {
	ps := ParseBirdProtocols(birdShowProtocolsAll)
	if len(ps) != 4 {
		t.Fatalf("%d protocols, want 4: %+v", len(ps), ps)
	}
	spk4, spk6, down := ps[1], ps[2], ps[3]
	if spk4.Name != "spk4_0" || spk4.Proto != "BGP" || spk4.State != "up" || spk4.SessionState() != "Established" {
		t.Errorf("spk4_0 = %+v", spk4)
	}
	if len(spk4.ImportUpdates) != 1 || spk4.ImportUpdates[0] != 120 || len(spk4.ImportWithdraws) != 1 || spk4.ImportWithdraws[0] != 30 {
		t.Errorf("spk4_0 imports = %v, %v; want [120], [30]", spk4.ImportUpdates, spk4.ImportWithdraws)
	}
	if spk4.NeighborID != "198.18.10.2" || spk6.NeighborID != "" {
		t.Errorf("neighbor IDs %q and %q, want 198.18.10.2 and none", spk4.NeighborID, spk6.NeighborID)
	}
	if spk4.GracefulRestart || !spk6.GracefulRestart {
		t.Errorf("graceful restart active: spk4_0 %v, spk6_0 %v; want false, true", spk4.GracefulRestart, spk6.GracefulRestart)
	}
	if len(spk4.Imported) != 1 || spk4.Imported[0] != 127 || len(spk6.Imported) != 0 {
		t.Errorf("imported: spk4_0 %v, spk6_0 %v; want [127], []", spk4.Imported, spk6.Imported)
	}
	if !spk4.LocalAddPathRx {
		t.Error("spk4_0: no local ADD-PATH receive")
	}
	if spk6.SessionState() != "Active" || spk6.LocalAddPathRx || len(spk6.ImportUpdates) != 0 {
		t.Errorf("spk6_0 = %+v: want Active, no ADD-PATH receive, no import count", spk6)
	}
	if down.SessionState() != "down" || down.Info != "" {
		t.Errorf("spk4_1 = %+v: want state down without Info", down)
	}

	peers := map[string]netip.Addr{"spk4_0": netip.MustParseAddr("198.18.10.2"), "spk6_0": netip.MustParseAddr("2001:db8:10::2")}
	states := birdSessionStates(birdShowProtocolsAll, func(p string) (netip.Addr, bool) { a, ok := peers[p]; return a, ok })
	if len(states) != 2 || states[peers["spk4_0"]] != "Established" || states[peers["spk6_0"]] != "Active" {
		t.Errorf("session states = %v", states)
	}
}
