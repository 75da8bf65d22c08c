package redfish

import (
	"errors"
	"fmt"
)

// Errors of the client, for errors.Is.
var (
	// ErrUnauthorized: the BMC refused the credentials (HTTP 401), also
	// after a new session.
	ErrUnauthorized = errors.New("the BMC refused the credentials")
	// ErrNotFound: the BMC has no resource at a URI (HTTP 404).
	ErrNotFound = errors.New("no such resource")
	// ErrMalformed: an answer that is not the JSON resource asked for.
	ErrMalformed = errors.New("malformed answer")
	// ErrStatus: any other HTTP status that is not a success.
	ErrStatus = errors.New("unexpected HTTP status")
	// ErrBadLink: a link that does not point into the BMC's own /redfish/
	// tree (the client follows no link to another host, which would get
	// the credentials).
	ErrBadLink = errors.New("link outside the service")
	// ErrNoSystem: no system matches the selection (or the BMC has none).
	ErrNoSystem = errors.New("no such system")
	// ErrSeveralSystems: the BMC has several systems and none was
	// selected.
	ErrSeveralSystems = errors.New("several systems and none selected")
	// ErrResetNotAllowed: the system has no Reset action, or its action
	// does not take the reset type.
	ErrResetNotAllowed = errors.New("reset not allowed")
)

// StatusError is an HTTP status that is not a success, with the message of
// the Redfish error the BMC gave, if any.
type StatusError struct {
	Code    int
	Message string
}

func (e *StatusError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("HTTP %d", e.Code)
	}
	return fmt.Sprintf("HTTP %d: %s", e.Code, e.Message)
}

// Unwrap makes a StatusError match its sentinel.
func (e *StatusError) Unwrap() error {
	switch e.Code {
	case 401:
		return ErrUnauthorized
	case 404:
		return ErrNotFound
	default:
		return ErrStatus
	}
}
