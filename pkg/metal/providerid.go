package metal

import (
	"errors"
	"fmt"
	"strings"
)

// ProviderID format, documented in docs/metal-provider.md and stable:
//
//	metal://inventory/<machine id>   a machine of nodes.inventory
//	metal://discovered/<node name>   a node accepted by discovery
const (
	providerIDScheme = ProviderName + "://"
	sourceInventory  = "inventory"
	sourceDiscovered = "discovered"
)

// ErrForeignProviderID is returned for a providerID this provider did not write.
var ErrForeignProviderID = errors.New("not a metal providerID")

type providerID struct {
	source string // sourceInventory or sourceDiscovered
	id     string
}

func (p providerID) String() string { return providerIDScheme + p.source + "/" + p.id }

func parseProviderID(s string) (providerID, error) {
	rest, ok := strings.CutPrefix(s, providerIDScheme)
	if !ok {
		return providerID{}, fmt.Errorf("parse providerID %q: %w", s, ErrForeignProviderID)
	}
	source, id, ok := strings.Cut(rest, "/")
	if !ok || id == "" || (source != sourceInventory && source != sourceDiscovered) {
		return providerID{}, fmt.Errorf("parse providerID %q: want metal://inventory/ID or metal://discovered/NAME: %w", s, ErrForeignProviderID)
	}
	return providerID{source: source, id: id}, nil
}
