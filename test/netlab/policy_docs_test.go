package netlab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPolicyDocsFRR: the FRR filters of docs/loadbalancer.md ("Filters on
// the router") read without error in FRR's own parser (vtysh's dry run),
// the FRR version the labs run.
func TestPolicyDocsFRR(t *testing.T) {
	if err := AvailableFRR(); err != nil {
		t.Skip(err)
	}
	block, err := DocBlock("loadbalancer.md", "<!-- policy:frr -->")
	if err != nil {
		t.Fatal(err)
	}
	check := func(conf string) (string, error) {
		p := filepath.Join(t.TempDir(), "frr.conf")
		if err := os.WriteFile(p, []byte(conf+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return output(vtyshPath, "--dryrun", "--config_dir", t.TempDir(), "-f", p)
	}
	if out, err := check(block); err != nil || strings.Contains(out, "%") {
		t.Errorf("FRR refuses the docs' filters: %v\n%s", err, out)
	}
	// The check can fail: FRR's parser refuses a line it does not know.
	if out, err := check(block + "\nroute-map TO-UPSTREAM permit 40\n match no-such-thing 1"); err == nil && !strings.Contains(out, "%") {
		t.Errorf("vtysh's dry run took an unknown command:\n%s", out)
	}
}
