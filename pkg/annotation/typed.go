package annotation

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// ErrInvalid marks a Service annotation or field that cannot be read. The
// provider maps it to the InvalidAnnotation Event.
var ErrInvalid = errors.New("invalid annotation")

// Key is the name of a Service annotation the provider reads.
type Key string

// Doc is what docs/reference/annotations.md says about one annotation. hack/gendocs writes the reference from Annotations, so that
// the names, types and defaults there are those the code reads.
type Doc struct {
	Name    Key
	Type    string // the value's type, from its valueType
	Default string // what holds when the annotation is unset or empty
	Example string // a value the annotation accepts (a test reads it)
	Meaning string
	// Aliases are other implementations' annotations of the same meaning,
	// read when this one is not set, in their order (MetalLB's, so that a
	// migration keeps what its Services ask for).
	Aliases []Key
}

// Typed is a Service annotation whose value reads as a T. Each is made by
// declare, in declared.go: one declaration holds the name, how the value
// reads, and what the reference says.
type Typed[T any] struct {
	doc   Doc
	parse func(raw string) (T, error)
}

// declared holds every declaration's doc, in the order the declarations
// were initialized (which follows their dependencies, not only the source).
var declared []Doc

// declare declares an annotation: its name, its value type and its doc
// (Name and Type are filled in here). Call it only in the initializers of
// package variables, so that All lists every annotation.
func declare[T any](name Key, typ valueType[T], doc Doc) Typed[T] {
	doc.Name, doc.Type = name, typ.name
	declared = append(declared, doc)
	return Typed[T]{doc: doc, parse: typ.parse}
}

// All lists the Service annotations the provider reads, by name.
func All() []Doc {
	out := slices.Clone(declared)
	slices.SortFunc(out, func(a, b Doc) int { return strings.Compare(string(a.Name), string(b.Name)) })
	return out
}

// Name is the annotation's name.
func (a Typed[T]) Name() Key { return a.doc.Name }

// Parse reads the annotation of a Service, or when it is not set the first
// of its aliases that is. An unset or empty annotation (as `kubectl annotate
// svc name=` leaves it) is not set: ok is false and the value T's zero. A value that cannot be read is an error that names the
// annotation and wraps ErrInvalid.
func (a Typed[T]) Parse(svc *v1.Service) (value T, ok bool, err error) {
	for _, name := range append([]Key{a.doc.Name}, a.doc.Aliases...) {
		raw := svc.Annotations[string(name)]
		if raw == "" {
			continue
		}
		v, err := a.parse(raw)
		if err != nil {
			return value, true, Invalid(string(name), err)
		}
		return v, true, nil
	}
	return value, false, nil
}

// Invalid says which annotation or field (source) cannot be read, and why,
// wrapping ErrInvalid. Users see the message in the InvalidAnnotation Event.
func Invalid(source string, err error) error {
	return fmt.Errorf("%s: %w: %w", source, err, ErrInvalid)
}
