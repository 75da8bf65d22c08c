package config

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

// maxFuzzInput bounds the documents fuzzed: the decoder's cost grows with the
// input, and a config is a few kilobytes.
const maxFuzzInput = 64 << 10

// FuzzParse feeds arbitrary documents to Parse. It must never panic; every
// refusal wraps ErrInvalid; every accepted config validates again, and
// written back out and parsed again gives the same config (defaults are
// idempotent and nothing is lost in the round trip).
//
// Seeds: testdata/fuzz/FuzzParse, plus every example config of the repository.
func FuzzParse(f *testing.F) {
	for _, glob := range []string{"testdata/*.yaml", "../../hack/local/*.yaml"} {
		paths, err := filepath.Glob(glob)
		if err != nil {
			f.Fatal(err)
		}
		for _, p := range paths {
			data, err := os.ReadFile(p) //nolint:gosec // the repository's example files
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzInput {
			t.Skip("larger than a config")
		}
		cfg, err := Parse(data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("refusal does not wrap ErrInvalid: %v", err)
			}
			if cfg != nil {
				t.Fatalf("refused, yet a config was returned")
			}
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("accepted config does not validate again: %v", err)
		}
		out, err := yaml.Marshal(cfg)
		if err != nil {
			t.Fatalf("marshal accepted config: %v", err)
		}
		again, err := Parse(out)
		if err != nil {
			t.Fatalf("accepted config, written out, is refused: %v\n%s", err, out)
		}
		if !sameDocument(t, cfg, again) {
			t.Fatalf("round trip changed the config:\nfirst  %+v\nsecond %+v\ndocument:\n%s", cfg, again, out)
		}
	})
}
