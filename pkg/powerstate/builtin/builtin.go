// Package builtin registers every power-state source of this repository:
// the provider imports it, and a new source's package is added here. The
// node agent does not link it (it asks no BMC).
package builtin

import (
	// Each registers itself with pkg/powerstate.
	_ "github.com/metal-ccm/metal-ccm/pkg/powerstate/ipmi"
	_ "github.com/metal-ccm/metal-ccm/pkg/powerstate/metal3"
	_ "github.com/metal-ccm/metal-ccm/pkg/powerstate/redfish"
	_ "github.com/metal-ccm/metal-ccm/pkg/powerstate/rufio"
)
