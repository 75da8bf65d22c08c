package bgp

import (
	"net/netip"
	"testing"

	"github.com/metal-ccm/metal-ccm/pkg/config"
)

// FuzzSpeakerConfig checks that every BGP config config.Parse accepts makes
// a speaker config the speaker accepts: a config that passes validation (or
// a live reload) must not fail at the next start. Password files are not
// read, and a router ID that would be derived from the kernel's routes is
// given instead. Seeds: testdata/fuzz/FuzzSpeakerConfig.
func FuzzSpeakerConfig(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			t.Skip("larger than a config")
		}
		cfg, err := config.Parse(data)
		if err != nil || len(cfg.BGP.Peers) == 0 {
			return
		}
		for i := range cfg.BGP.Peers {
			cfg.BGP.Peers[i].PasswordFile = ""
		}
		if cfg.BGP.RouterID == "" {
			for _, p := range cfg.BGP.Peers {
				if a := netip.MustParseAddr(p.Address); a.Is4() {
					if p.LocalAddress == "" {
						cfg.BGP.RouterID = "198.18.0.1" // what the kernel would choose
					}
					break
				}
			}
		}
		sc, err := speakerConfig(&cfg.BGP, &cfg.Routes)
		if err != nil {
			t.Fatalf("config.Parse accepted a BGP config that speakerConfig refuses: %v\n%s", err, data)
		}
		if err := sc.Validate(); err != nil {
			t.Fatalf("config.Parse accepted a BGP config that the speaker refuses: %v\n%s", err, data)
		}
	})
}
