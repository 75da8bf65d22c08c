package objcache

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// ErrBadSettings marks settings a source cannot use.
var ErrBadSettings = errors.New("bad settings")

// Ref names one object.
type Ref struct {
	Namespace, Name string
}

func (r Ref) String() string { return r.Namespace + "/" + r.Name }

// ObjectSettings are a machine's own settings (nodes.inventory[].powerState)
// for a source that reads one object per machine: which object.
type ObjectSettings struct {
	// Namespace defaults to the source's namespace setting.
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
}

// SourceSettings are the settings (nodes.powerState.settings) of a source
// that reads one object per machine.
type SourceSettings struct {
	// Namespace is the only namespace watched, and where an object named
	// like its Node is looked for. Empty: every namespace is watched.
	Namespace string `json:"namespace,omitempty"`
}

// DecodeStrict decodes a JSON object, refusing unknown fields; empty and
// null are the zero value.
func DecodeStrict(raw json.RawMessage, into any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(into); err != nil {
		return fmt.Errorf("%w: %w", ErrBadSettings, err)
	}
	return nil
}

// ParseSource reads a source's settings.
func ParseSource(raw json.RawMessage) (SourceSettings, error) {
	var s SourceSettings
	err := DecodeStrict(raw, &s)
	return s, err
}

// FromSettings is the object a machine's settings name, ok false when they
// name none (no settings, or no name). The namespace defaults to the
// source's; an object outside the source's namespace is refused, as the
// cache does not hold it.
func FromSettings(raw json.RawMessage, src SourceSettings) (ref Ref, ok bool, err error) {
	var m ObjectSettings
	if err := DecodeStrict(raw, &m); err != nil {
		return Ref{}, false, err
	}
	if m.Name == "" {
		if m.Namespace != "" {
			return Ref{}, false, fmt.Errorf("%w: name: required with namespace", ErrBadSettings)
		}
		return Ref{}, false, nil
	}
	ref = Ref(m)
	if ref.Namespace == "" {
		ref.Namespace = src.Namespace
	}
	if ref.Namespace == "" {
		return Ref{}, false, fmt.Errorf("%w: namespace: required when the source has no namespace setting", ErrBadSettings)
	}
	if err := src.Holds(ref); err != nil {
		return Ref{}, false, err
	}
	return ref, true, nil
}

// Holds checks that the source's cache can hold ref.
func (s SourceSettings) Holds(ref Ref) error {
	if s.Namespace != "" && ref.Namespace != s.Namespace {
		return fmt.Errorf("%w: namespace: %q is not the source's namespace %q, the only one watched", ErrBadSettings, ref.Namespace, s.Namespace)
	}
	return nil
}
