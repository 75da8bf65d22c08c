package metal

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/metal-ccm/metal-ccm/pkg/powerstate"
)

// fakeExistence says, by node name, whether a machine exists; a node it
// does not list is an error.
type fakeExistence struct {
	fakePower
	exists map[string]bool
}

func (f fakeExistence) Exists(_ context.Context, m powerstate.Machine) (bool, error) {
	e, ok := f.exists[m.Node.Name]
	if !ok {
		return false, errors.New("cannot tell")
	}
	return e, nil
}

// TestInstanceExistsFromTheSource: a source that can tell existence makes a
// machine gone only by a definite (false, nil); its errors are "exists", and
// the inventory's own rule still holds.
func TestInstanceExistsFromTheSource(t *testing.T) {
	powerstate.Register("test-existence", func(json.RawMessage, powerstate.Env) (powerstate.Source, error) {
		return fakeExistence{exists: map[string]bool{"a": false, "b": true, "c": false}}, nil
	})
	c, rec := newTestCloud(t, testConfig+"  powerState: {source: test-existence}\n")
	for _, tc := range []struct {
		name string
		node *v1.Node
		want bool
	}{
		{"in the inventory, the source says gone", node("a", "metal://inventory/srv-a", "", false), false},
		{"in the inventory, the source says it exists", node("b", "metal://inventory/b", "", false), true},
		{"discovered, the source says gone", node("c", "metal://discovered/c", "", false), false},
		{"the source cannot tell", node("d", "metal://discovered/d", "", false), true},
		{"removed from the inventory, whatever the source says", node("old", "metal://inventory/old", "", false), false},
		{"foreign providerID, the source cannot tell", node("f", "metal3://m3/f/m", "", false), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := c.InstanceExists(context.Background(), tc.node)
			if err != nil || got != tc.want {
				t.Errorf("InstanceExists = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	var gone []string
	for len(rec.Events) > 0 {
		if e := <-rec.Events; strings.Contains(e, ReasonMachineGone) {
			gone = append(gone, e)
		}
	}
	if len(gone) != 2 {
		t.Errorf("want a %s Event for each machine the source says is gone (a, c), got %v", ReasonMachineGone, gone)
	}
}
