// Package builtin registers every announcement protocol of this
// repository: the replica runtime and the node agent import it, and a new
// protocol's package is added here.
package builtin

import (
	// Each registers itself with pkg/protocol.
	_ "github.com/metal-ccm/metal-ccm/pkg/protocol/bgp"
	_ "github.com/metal-ccm/metal-ccm/pkg/protocol/l2"
)
