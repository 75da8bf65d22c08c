package ipam

import "errors"

// Errors of Assign. Each is wrapped with what was asked; test with errors.Is.
var (
	// ErrPoolExhausted: no free address in any pool the Service may use.
	ErrPoolExhausted = errors.New("no free address")
	// ErrNotInPool: a requested address is in no pool the Service may use.
	ErrNotInPool = errors.New("address is in no pool the Service may use")
	// ErrInUse: a requested address is held by a Service it cannot be shared with.
	ErrInUse = errors.New("address is in use")
	// ErrUnknownPool: the named pool does not exist.
	ErrUnknownPool = errors.New("no such pool")
	// ErrPoolNotAllowed: the named pool does not allow the Service.
	ErrPoolNotAllowed = errors.New("pool does not allow the Service")
	// ErrNoPoolForFamily: no pool the Service may use has addresses of a
	// family it needs.
	ErrNoPoolForFamily = errors.New("no pool has addresses of the family")
	// ErrSharingClash: the Service may share the address, but a port or the
	// traffic policy of a Service sharing it clashes.
	ErrSharingClash = errors.New("address is shared by a Service whose ports or traffic policy clash")
)
