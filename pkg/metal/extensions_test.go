package metal

import (
	"slices"
	"testing"

	"github.com/metal-ccm/metal-ccm/pkg/annotation"
	"github.com/metal-ccm/metal-ccm/pkg/extension"
)

// TestExtensions: the manager finds every extension of the provider, so
// that none of its wiring stops silently.
func TestExtensions(t *testing.T) {
	c, _ := newTestCloud(t, testConfig)
	ext := extension.Of(c)
	if ext.EveryReplica == nil || ext.WatchConfig == nil || ext.Services == nil {
		t.Fatalf("extensions %+v: want every replica's work, the config watch and the service controller's", ext)
	}
	s := ext.Services
	if s.SetRequeue == nil || s.SetBusy == nil {
		t.Error("the service controller's requeue and busy are not taken")
	}
	for _, a := range []string{annotation.Summary, annotation.L2Nodes} {
		if !slices.Contains(s.OutputAnnotations, a) {
			t.Errorf("output annotations %v: %s missing", s.OutputAnnotations, a)
		}
	}
	if got := extension.Of(struct{}{}); got.EveryReplica != nil || got.Services != nil || got.WatchConfig != nil {
		t.Errorf("a provider without extensions has %+v", got)
	}
}
