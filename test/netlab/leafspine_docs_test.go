package netlab

import (
	"strings"
	"testing"
)

// TestLeafSpineDocs keeps docs/leaf-spine.md's ToR configs the ones the lab
// runs (rack 0 on BIRD, rack 1 on FRR): what the guide gives is what the
// tests run.
func TestLeafSpineDocs(t *testing.T) {
	tors, _, err := LeafSpineConfigs(LeafSpineOptions{TorRouter: [2]RouterKind{RouterBIRD, RouterFRR}})
	if err != nil {
		t.Fatal(err)
	}
	for i, marker := range []string{"<!-- leafspine:tor0 -->", "<!-- leafspine:tor1 -->"} {
		block, err := DocBlock("leaf-spine.md", marker)
		if err != nil {
			t.Fatal(err)
		}
		if want := strings.TrimRight(tors[i], "\n"); block != want {
			t.Errorf("docs/leaf-spine.md: the ToR %d config differs from the lab's; put this in its block:\n%s", i, want)
		}
	}
}
