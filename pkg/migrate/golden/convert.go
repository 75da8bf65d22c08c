package golden

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/migrate"
)

// Converter is a converter under test, its options set.
type Converter func([]migrate.Object) (*config.CloudConfig, *migrate.Report, error)

// Golden files of an input testdata/NAME.yaml.
const (
	ConfigSuffix = ".config.yaml"
	ReportSuffix = ".report.txt"
)

// Run converts each testdata/*.yaml that is not itself a golden file and
// compares the rendered config and the report with NAME.config.yaml and
// NAME.report.txt beside it. The config must be one the project's loader
// accepts.
func Run(t *testing.T, convert Converter) {
	t.Helper()
	inputs, err := filepath.Glob("testdata/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range inputs {
		if strings.HasSuffix(in, ConfigSuffix) {
			continue
		}
		base := strings.TrimSuffix(in, ".yaml")
		t.Run(filepath.Base(base), func(t *testing.T) {
			out, report := ConvertFile(t, in, convert)
			Compare(t, base+ConfigSuffix, out)
			Compare(t, base+ReportSuffix, report)
		})
	}
}

// ConvertFile converts the objects of the file at path and returns the
// rendered config, checked by the project's loader, and the report.
func ConvertFile(t *testing.T, path string, convert Converter) (out, report []byte) {
	t.Helper()
	f, err := os.Open(path) //nolint:gosec // a test's own testdata file
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	objs, err := migrate.ReadObjects(f, path)
	if err != nil {
		t.Fatal(err)
	}
	cfg, rep, err := convert(objs)
	if err != nil {
		t.Fatal(err)
	}
	out, err = migrate.Render(cfg, "")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if _, err := config.Parse(out); err != nil {
		t.Fatalf("the project's loader refuses the output: %v", err)
	}
	var b bytes.Buffer
	if err := rep.Write(&b); err != nil {
		t.Fatal(err)
	}
	return out, b.Bytes()
}
