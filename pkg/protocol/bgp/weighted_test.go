package bgp

import (
	"net/netip"
	"testing"

	"github.com/metal-ccm/metal-ccm/pkg/config"
)

func TestWeightedECMP(t *testing.T) {
	parse := func(pools string) *config.LoadBalancer {
		t.Helper()
		cfg, err := config.Parse([]byte("apiVersion: metal-ccm.io/v1alpha1\nkind: CloudConfig\nloadBalancer:\n  pools:\n" + pools))
		if err != nil {
			t.Fatal(err)
		}
		return &cfg.LoadBalancer
	}
	if f := WeightedECMP(parse("  - {name: plain, addresses: [198.18.41.0/24]}\n")); f != nil {
		t.Error("no pool asks for weighted ECMP, want no Weighted function")
	}
	weighted := WeightedECMP(parse("  - {name: w, addresses: [198.18.40.0/24, \"2001:db8:40::/120\"], weightedECMP: true}\n" +
		"  - {name: plain, addresses: [198.18.41.0/24]}\n"))
	for _, tc := range []struct {
		addr string
		want bool
	}{
		{"198.18.40.1", true},
		{"2001:db8:40::1", true},
		{"198.18.41.1", false},
		{"198.18.42.1", false}, // in no pool
	} {
		t.Run(tc.addr, func(t *testing.T) {
			if got := weighted(nil, netip.MustParseAddr(tc.addr)); got != tc.want {
				t.Errorf("= %v, want %v", got, tc.want)
			}
		})
	}
}
