package redfish

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
)

// Selector chooses a system of a BMC: by its Id, by its UUID, or, with
// neither, the only one.
type Selector struct {
	ID   string
	UUID string
}

func (s Selector) String() string {
	switch {
	case s.ID != "":
		return "Id " + s.ID
	case s.UUID != "":
		return "UUID " + s.UUID
	default:
		return "the only system"
	}
}

// Matches says whether cs is the system s selects.
func (s Selector) Matches(cs *ComputerSystem) bool {
	switch {
	case s.ID != "":
		return cs.ID == s.ID
	case s.UUID != "":
		// UUIDs are compared as values: BMCs differ in case.
		return strings.EqualFold(cs.UUID, s.UUID)
	default:
		return true
	}
}

// Systems lists the links of the BMC's systems.
func (c *Client) Systems(ctx context.Context) ([]Link, error) {
	root, err := c.ServiceRoot(ctx)
	if err != nil {
		return nil, err
	}
	if root.Systems.ODataID == "" {
		return nil, fmt.Errorf("%w: the service root links no Systems", ErrNoSystem)
	}
	var col Collection
	if err := c.Get(ctx, root.Systems.ODataID, &col); err != nil {
		return nil, fmt.Errorf("systems: %w", err)
	}
	return col.Members, nil
}

// System reads the system at uri.
func (c *Client) System(ctx context.Context, uri string) (*ComputerSystem, error) {
	var cs ComputerSystem
	if err := c.Get(ctx, uri, &cs); err != nil {
		return nil, fmt.Errorf("system: %w", err)
	}
	if cs.ODataID == "" {
		cs.ODataID = uri
	}
	return &cs, nil
}

// FindSystem reads the system sel chooses. A system chosen by Id is looked
// for first at the member whose URI ends with the Id (where BMCs put it),
// then among all.
func (c *Client) FindSystem(ctx context.Context, sel Selector) (*ComputerSystem, error) {
	members, err := c.Systems(ctx)
	if err != nil {
		return nil, err
	}
	if sel.ID == "" && sel.UUID == "" {
		switch len(members) {
		case 0:
			return nil, fmt.Errorf("%w: the BMC lists none", ErrNoSystem)
		case 1:
			return c.System(ctx, members[0].ODataID)
		default:
			return nil, fmt.Errorf("%w: the BMC lists %d (select one by systemId or systemUUID)", ErrSeveralSystems, len(members))
		}
	}
	if sel.ID != "" {
		slices.SortStableFunc(members, func(a, b Link) int {
			return boolOrder(path.Base(a.ODataID) == sel.ID, path.Base(b.ODataID) == sel.ID)
		})
	}
	for _, m := range members {
		cs, err := c.System(ctx, m.ODataID)
		if errors.Is(err, ErrNotFound) {
			continue // gone since the collection was read
		}
		if err != nil {
			return nil, err
		}
		if sel.Matches(cs) {
			return cs, nil
		}
	}
	return nil, fmt.Errorf("%w: none of the BMC's %d has %s", ErrNoSystem, len(members), sel)
}

// boolOrder sorts true first.
func boolOrder(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	default:
		return 1
	}
}

// Reset asks the system to reset (ComputerSystem.Reset) with the type t,
// when its action allows it.
func (c *Client) Reset(ctx context.Context, cs *ComputerSystem, t ResetType) error {
	a := cs.Actions.Reset
	if a.Target == "" {
		return fmt.Errorf("system %s: %w: no ComputerSystem.Reset action", cs.ID, ErrResetNotAllowed)
	}
	if len(a.AllowableValues) > 0 && !slices.Contains(a.AllowableValues, t) {
		return fmt.Errorf("system %s: %w: %s is not among %v", cs.ID, ErrResetNotAllowed, t, a.AllowableValues)
	}
	if err := c.Post(ctx, a.Target, map[string]ResetType{"ResetType": t}); err != nil {
		return fmt.Errorf("system %s: reset %s: %w", cs.ID, t, err)
	}
	return nil
}

// isGone says whether err is a 404 or a 401: for a session's deletion, the
// session is gone either way.
func isGone(err error) bool {
	return errors.Is(err, ErrNotFound) || errors.Is(err, ErrUnauthorized)
}
