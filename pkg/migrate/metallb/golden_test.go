package metallb

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/migrate"
	"github.com/metal-ccm/metal-ccm/pkg/migrate/golden"
)

// TestGolden converts each testdata/*.yaml and compares the config and the
// report with the golden files beside it; the config must be one the
// project's loader accepts.
func TestGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range inputs {
		if filepath.Ext(in[:len(in)-len(".yaml")]) != "" {
			continue // a golden file: name.config.yaml
		}
		base := in[:len(in)-len(".yaml")]
		t.Run(filepath.Base(base), func(t *testing.T) {
			f, err := os.Open(in) //nolint:gosec // a file of testdata
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			objs, err := migrate.ReadObjects(f, in)
			if err != nil {
				t.Fatal(err)
			}
			cfg, rep, err := Convert(objs, Options{MemberlistPort: 7947})
			if err != nil {
				t.Fatal(err)
			}
			out, err := migrate.Render(cfg, "")
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if _, err := config.Parse(out); err != nil {
				t.Fatalf("the project's loader refuses the output: %v", err)
			}
			var report bytes.Buffer
			if err := rep.Write(&report); err != nil {
				t.Fatal(err)
			}
			golden.Compare(t, base+".config.yaml", out)
			golden.Compare(t, base+".report.txt", report.Bytes())
		})
	}
}
