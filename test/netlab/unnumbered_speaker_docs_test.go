package netlab

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnnumberedSpeakerDocs keeps docs/leaf-spine.md's router configs for a
// replica's interface peer what a lab with UnnumberedSpeaker runs (test/e2e
// TestOnlyPoolAddressesAreAnnounced's): BIRD's part of it, which BIRD
// parses, and FRR's whole config with one speaker, which FRR loads without
// a complaint. It needs no root.
func TestUnnumberedSpeakerDocs(t *testing.T) {
	l, frr := labConfigs(t, Options{Speakers: 1, UnnumberedSpeaker: true})
	bird := l.birdConfig()
	for _, tc := range []struct{ marker, conf, want string }{
		{"<!-- flat:unnumbered:bird -->", bird, l.Opts.birdUnnumberedSpeaker()},
		{"<!-- flat:unnumbered:frr -->", frr, frr},
	} {
		block, err := DocBlock("leaf-spine.md", tc.marker)
		if err != nil {
			t.Fatal(err)
		}
		if want := strings.TrimRight(tc.want, "\n"); block != want {
			t.Errorf("docs/leaf-spine.md: the block after %s differs from the lab's; put this in it:\n%s", tc.marker, want)
		}
		if !strings.Contains(tc.conf, tc.want) {
			t.Errorf("the lab's config lacks the block after %s:\n%s", tc.marker, tc.conf)
		}
	}
	birdParse(t, bird)
	frrDryRun(t, frr)
	if err := (&Options{IPv6Only: true, NodePeers: []int{0}, UnnumberedSpeaker: true}).defaults(); err == nil {
		t.Error("IPv6Only with UnnumberedSpeaker: no error")
	}
}

// birdParse checks that BIRD parses conf (bird -p), where BIRD is installed.
func birdParse(t *testing.T, conf string) {
	t.Helper()
	if _, err := exec.LookPath(birdPath); err != nil {
		t.Logf("bird -p skipped: %v", err)
		return
	}
	path := filepath.Join(t.TempDir(), "bird.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(birdPath, "-p", "-c", path).CombinedOutput(); err != nil { //nolint:gosec // BIRD on a file of this test
		t.Errorf("bird -p: %v:\n%s\nconfig:\n%s", err, out, conf)
	}
}
