package bmcfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRotation: a file replaced (a Secret volume's update writes a new
// file and swaps it in) or rewritten is read again; a missing file or one
// without a certificate is an error that names it.
func TestRotation(t *testing.T) {
	dir := t.TempDir()
	user, pass := filepath.Join(dir, "user"), filepath.Join(dir, "pass")
	write := func(p, s string) {
		t.Helper()
		tmp := p + ".new"
		if err := os.WriteFile(tmp, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, p); err != nil {
			t.Fatal(err)
		}
	}
	write(user, "admin\n")
	write(pass, "first\n")
	for _, want := range []string{"first", "second", "third-longer"} {
		write(pass, want+"\n")
		u, p, err := Credentials(user, pass)
		if err != nil || u != "admin" || p != want {
			t.Errorf("Credentials = %q, %q, %v; want admin, %q", u, p, err, want)
		}
	}
	// Rewritten in place, another size.
	if err := os.WriteFile(pass, []byte("in-place\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, p, _ := Credentials(user, pass); p != "in-place" {
		t.Errorf("after a rewrite in place: %q, want in-place", p)
	}
	if _, _, err := Credentials("", filepath.Join(dir, "missing")); err == nil ||
		!strings.Contains(err.Error(), "usernameFile: required") || !strings.Contains(err.Error(), "passwordFile: open") {
		t.Errorf("missing files: %v; want both fields named", err)
	}
	if _, _, err := CertPool(user); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("CertPool of a file without a certificate: %v", err)
	}
}
