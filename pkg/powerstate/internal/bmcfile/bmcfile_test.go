package bmcfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeClock makes the package's clock t's own: each advance moves it by d.
func fakeClock(t *testing.T) (advance func(d time.Duration)) {
	t.Helper()
	at := time.Unix(1_000_000, 0)
	old := now
	now = func() time.Time { return at }
	t.Cleanup(func() { now = old })
	return func(d time.Duration) { at = at.Add(d) }
}

// TestRotation: a file replaced (a Secret volume's update writes a new
// file and swaps it in) or rewritten is read again; a missing file or one
// without a certificate is an error that names it.
func TestRotation(t *testing.T) {
	advance := fakeClock(t)
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
		advance(recheck)
		u, p, err := Credentials(user, pass)
		if err != nil || u != "admin" || p != want {
			t.Errorf("Credentials = %q, %q, %v; want admin, %q", u, p, err, want)
		}
	}
	// Rewritten in place, another size.
	if err := os.WriteFile(pass, []byte("in-place\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	advance(recheck)
	if _, p, _ := Credentials(user, pass); p != "in-place" {
		t.Errorf("after a rewrite in place: %q, want in-place", p)
	}
	if _, _, err := Credentials("", filepath.Join(dir, "missing")); err == nil ||
		!strings.Contains(err.Error(), "usernameFile: required") || !strings.Contains(err.Error(), "passwordFile: stat") {
		t.Errorf("missing files: %v; want both fields named", err)
	}
	if _, _, err := CertPool(user); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("CertPool of a file without a certificate: %v", err)
	}
}

// TestRecheck: within recheck of its last look a file is not looked at
// again (the old content stays), and at recheck it is.
func TestRecheck(t *testing.T) {
	advance := fakeClock(t)
	path := filepath.Join(t.TempDir(), "pass")
	for i, c := range []struct {
		write, want string
		after       time.Duration
	}{
		{"first\n", "first", 0},
		{"second\n", "first", recheck / 2},
		{"", "first", recheck/2 - time.Nanosecond},
		{"", "second", time.Nanosecond},
	} {
		if c.write != "" {
			if err := os.WriteFile(path, []byte(c.write), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		advance(c.after)
		b, err := ReadFile(path)
		if err != nil || string(b) != c.want+"\n" {
			t.Errorf("step %d: ReadFile = %q, %v; want %q", i, b, err, c.want)
		}
	}
}
