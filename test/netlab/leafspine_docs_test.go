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

// TestLeafSpineBFDDocs keeps docs/leaf-spine.md's BFD configs the ones the
// lab runs with LeafSpineOptions.BFD, which test/e2e brings up with the
// agents: BIRD's bfd protocol (and bfd on in the nodes' template), FRR's
// bfdd profile (and the peer groups' use of it).
func TestLeafSpineBFDDocs(t *testing.T) {
	tors, _, err := LeafSpineConfigs(LeafSpineOptions{TorRouter: [2]RouterKind{RouterBIRD, RouterFRR}, BFD: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		marker, lab string
		uses        []string // lines the ToR's config has beside the block
		tor         int
	}{
		{"<!-- leafspine:bfd-bird -->", lsBIRDBFD, []string{"\tbfd on;"}, 0},
		{"<!-- leafspine:bfd-frr -->", lsFRRBfddConfig, []string{" neighbor NODES bfd profile nodes", " neighbor NODES6 bfd profile nodes"}, 1},
	} {
		block, err := DocBlock("leaf-spine.md", tc.marker)
		if err != nil {
			t.Fatal(err)
		}
		if want := strings.TrimRight(tc.lab, "\n"); block != want {
			t.Errorf("docs/leaf-spine.md: the block after %s differs from the lab's; put this in it:\n%s", tc.marker, want)
		}
		if !strings.Contains(tors[tc.tor], tc.lab) && tc.tor == 0 {
			t.Errorf("ToR 0's config lacks the BFD block:\n%s", tors[0])
		}
		for _, line := range tc.uses {
			if !strings.Contains(tors[tc.tor], line) {
				t.Errorf("ToR %d's config lacks %q:\n%s", tc.tor, line, tors[tc.tor])
			}
		}
	}
}

// TestLeafSpineUnnumberedDocs keeps docs/leaf-spine.md's unnumbered ToRs
// the ones the lab runs with both racks unnumbered and BFD, as test/e2e
// TestLeafSpineUnnumbered does: rack 0's BIRD (a link-local neighbour
// range per link, BFD on the node links), rack 1's FRR (a neighbour per
// interface, each with bfdd's profile, the block of TestLeafSpineBFDDocs).
func TestLeafSpineUnnumberedDocs(t *testing.T) {
	tors, _, err := LeafSpineConfigs(LeafSpineOptions{TorRouter: [2]RouterKind{RouterBIRD, RouterFRR}, Unnumbered: [2]bool{true, true}, BFD: true})
	if err != nil {
		t.Fatal(err)
	}
	for r, tc := range []struct{ marker, has, bfd string }{
		{"<!-- leafspine:unnumbered-bird -->", "\tneighbor range fe80::/10 as ", "\tinterface \"n*\" {\n\t\tmin rx interval 300 ms;"},
		{"<!-- leafspine:unnumbered -->", " neighbor n0 interface remote-as ", " neighbor n0 bfd profile nodes\n"},
	} {
		block, err := DocBlock("leaf-spine.md", tc.marker)
		if err != nil {
			t.Fatal(err)
		}
		if want := strings.TrimRight(tors[r], "\n"); block != want {
			t.Errorf("docs/leaf-spine.md: the unnumbered ToR %d config differs from the lab's; put this in the block after %s:\n%s", r, tc.marker, want)
		}
		if !strings.Contains(tors[r], tc.has) {
			t.Errorf("the unnumbered ToR %d has no link-local neighbour:\n%s", r, tors[r])
		}
		if !strings.Contains(tors[r], tc.bfd) {
			t.Errorf("the unnumbered ToR %d has no BFD with its nodes (%q):\n%s", r, tc.bfd, tors[r])
		}
	}
}
