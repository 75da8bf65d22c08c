package framework

import (
	"os"
	"testing"
)

// ReplaceFile replaces path's content by writing a new file and renaming
// it over path, as a ConfigMap volume's update swaps its files: a reader
// sees the old content or the new, never a part.
func ReplaceFile(t testing.TB, path, body string) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
