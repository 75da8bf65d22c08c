// Package golden compares a test's output with a file under testdata, or
// rewrites the file when the test runs with -update.
package golden

import (
	"bytes"
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// Compare fails t when got differs from the file at path; with -update it
// writes got there instead.
func Compare(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o600); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path) //nolint:gosec // a test's own testdata file
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run with -update to rewrite it):\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}
