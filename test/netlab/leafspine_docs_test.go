package netlab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metal-ccm/metal-ccm/test/framework"
)

// TestLeafSpineDocs keeps docs/leaf-spine.md's ToR configs the ones the lab
// runs (rack 0 on BIRD, rack 1 on FRR): what the guide gives is what the
// tests run.
func TestLeafSpineDocs(t *testing.T) {
	tors, _, err := LeafSpineConfigs(LeafSpineOptions{TorRouter: [2]RouterKind{RouterBIRD, RouterFRR}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(framework.RepoRoot(), "docs", "leaf-spine.md")
	doc, err := os.ReadFile(path) //nolint:gosec // the repository's own docs
	if err != nil {
		t.Fatal(err)
	}
	for i, marker := range []string{"<!-- leafspine:tor0 -->", "<!-- leafspine:tor1 -->"} {
		_, after, ok := strings.Cut(string(doc), marker+"\n```\n")
		if !ok {
			t.Fatalf("%s lacks %s followed by a code block", path, marker)
		}
		block, _, ok := strings.Cut(after, "\n```\n")
		if !ok {
			t.Fatalf("%s: the block after %s does not end", path, marker)
		}
		if want := strings.TrimRight(tors[i], "\n"); block != want {
			t.Errorf("%s: the ToR %d config differs from the lab's; put this in its block:\n%s", path, i, want)
		}
	}
}
