package netlab

import (
	"strings"
	"testing"
)

// TestIPv6OnlyDocs keeps docs/routes.md's IPv6-only router configs the
// ones a lab with IPv6Only runs (test/realnodes TestIPv6OnlyRealNodes's,
// which checks its running router's config against them too), with no IPv4
// session, and FRR's loading without a complaint. It needs no root.
func TestIPv6OnlyDocs(t *testing.T) {
	l, frr := labConfigs(t, Options{Nodes: 2, NodePeers: []int{0, 1}, IPv6Only: true})
	for _, tc := range []struct {
		marker, conf string
		ipv4         []string // what an IPv4 session would add
	}{
		{"<!-- ipv6only:bird -->", l.birdConfig(), []string{"ipv4", "198.18.10.1 as", "spk"}},
		{"<!-- ipv6only:frr -->", frr, []string{"ipv4 unicast\n", "peer-group CCM\n", "2001:db8:10::2 "}},
	} {
		block, err := DocBlock("routes.md", tc.marker)
		if err != nil {
			t.Fatal(err)
		}
		if want := strings.TrimRight(tc.conf, "\n"); block != want {
			t.Errorf("docs/routes.md: the block after %s differs from the lab's; put this in it:\n%s", tc.marker, want)
		}
		for _, s := range tc.ipv4 {
			if strings.Contains(tc.conf, s) {
				t.Errorf("the IPv6-only config after %s has %q:\n%s", tc.marker, s, tc.conf)
			}
		}
		if !strings.Contains(tc.conf, "its router ID: 32.17.13.169,") {
			t.Errorf("the config after %s does not give node 0's router ID:\n%s", tc.marker, tc.conf)
		}
	}
	frrDryRun(t, frr)
	if err := (&Options{IPv6Only: true}).defaults(); err == nil {
		t.Error("IPv6Only without NodePeers: no error")
	}
}

// labConfigs is a lab of opts that is not built, to render its router's
// configs, and its FRR config.
func labConfigs(t *testing.T, opts Options) (*Lab, string) {
	t.Helper()
	if err := opts.defaults(); err != nil {
		t.Fatal(err)
	}
	l := &Lab{Opts: opts}
	frr, err := l.frrConfig()
	if err != nil {
		t.Fatal(err)
	}
	return l, frr
}
