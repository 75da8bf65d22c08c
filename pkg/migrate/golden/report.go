package golden

import (
	"slices"
	"strings"
	"testing"

	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/migrate"
)

// Items converts the objects of input (YAML) and checks that the report
// has exactly the items want ("Object: field", in any order) and that the
// config renders into one the project's loader takes; it returns the
// config for further checks.
func Items(t *testing.T, input string, convert Converter, want []string) *config.CloudConfig {
	t.Helper()
	objs, err := migrate.ReadObjects(strings.NewReader(input), t.Name())
	if err != nil {
		t.Fatal(err)
	}
	cfg, rep, err := convert(objs)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := migrate.Render(cfg, ""); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got := make([]string, 0, len(rep.Items))
	for _, it := range rep.Items {
		got = append(got, it.Object+": "+it.Field)
	}
	slices.Sort(got)
	want = slices.Clone(want)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("report items:\n%s\nwant:\n%s\nreport: %v", strings.Join(got, "\n"), strings.Join(want, "\n"), rep.Items)
	}
	return cfg
}
