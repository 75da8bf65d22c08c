package migrate_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/metal-ccm/metal-ccm/pkg/migrate/golden"
)

// TestDocsExamples keeps the examples of docs/migration.md equal to the
// converters' golden files: the input, the config and the report of each.
func TestDocsExamples(t *testing.T) {
	doc := filepath.Join("..", "..", "docs", "migration.md")
	for _, tc := range []struct{ marker, file string }{
		{"migrate:metallb:input", "metallb/testdata/example.yaml"},
		{"migrate:metallb:config", "metallb/testdata/example" + golden.ConfigSuffix},
		{"migrate:metallb:report", "metallb/testdata/example" + golden.ReportSuffix},
		{"migrate:kube-vip:input", "kubevip/testdata/example.yaml"},
		{"migrate:kube-vip:config", "kubevip/testdata/example" + golden.ConfigSuffix},
		{"migrate:kube-vip:report", "kubevip/testdata/example" + golden.ReportSuffix},
	} {
		t.Run(tc.marker, func(t *testing.T) {
			want, err := os.ReadFile(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			golden.Doc(t, doc, tc.marker, want)
		})
	}
}
