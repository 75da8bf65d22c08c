package kubevip

import (
	"testing"

	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/migrate"
	"github.com/metal-ccm/metal-ccm/pkg/migrate/golden"
)

// TestGolden converts each testdata/*.yaml and compares the config and the
// report with the golden files beside it (-update rewrites them).
func TestGolden(t *testing.T) {
	golden.Run(t, func(objs []migrate.Object) (*config.CloudConfig, *migrate.Report, error) {
		return Convert(objs, Options{})
	})
}
